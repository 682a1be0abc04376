# tools/abi_layout.py: run inside gdb by tools/abi_check.sh; prints the ABI of each type named in
# ABI_TYPES (space-separated) of the loaded program to ABI_OUT, one line per member, in a form that does
# not depend on names the ABI does not see: typedefs resolved, enums as the integers they are, C's _Bool
# and C++'s bool alike, and a pointer's target described by a digest of its own layout (so a v6 function
# taking a v5 descriptor differs). A type the program lacks is printed as "missing".
import hashlib
import os

import gdb


def describe(type_, depth=0):
    """A canonical one-line description of a type's ABI."""
    t = type_.strip_typedefs().unqualified()
    code = t.code
    if code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
        kind = "struct" if code == gdb.TYPE_CODE_STRUCT else "union"
        parts = ["%d%s:%s:%s" % (f.bitpos, "/%d" % f.bitsize if f.bitsize else "", f.name or "",
                                 describe(f.type, depth + 1)) for f in t.fields()]  # bit offsets, widths
        return "%s%d{%s}" % (kind, t.sizeof, ";".join(parts))
    if code == gdb.TYPE_CODE_PTR:
        target = t.target().strip_typedefs().unqualified()
        if depth > 8:
            return "ptr"
        text = describe(target, depth + 1)
        if target.code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):  # named by a digest of its layout
            text = text[: text.index("{")] + "#" + hashlib.sha1(text.encode()).hexdigest()[:12]
        return "ptr(%s)" % text
    if code == gdb.TYPE_CODE_FUNC:
        parameters = ",".join(describe(f.type, depth + 1) for f in t.fields())
        if str(t).rstrip().endswith("...)"):  # variadic (NCCL's logger): a different calling convention
            parameters += ",..."
        return "func(%s)->%s" % (parameters, describe(t.target(), depth + 1))
    if code == gdb.TYPE_CODE_ARRAY:
        low, high = t.range()
        inner = describe(t.target(), depth + 1)  # C order: the outer dimension first
        split = inner.find("[") if inner.endswith("]") else -1
        base, dimensions = (inner, "") if split < 0 else (inner[:split], inner[split:])
        return "%s[%d]%s" % (base, high - low + 1, dimensions)
    if code == gdb.TYPE_CODE_ENUM:
        return "int%d" % (8 * t.sizeof)
    if code == gdb.TYPE_CODE_BOOL:
        return "bool"
    if code == gdb.TYPE_CODE_INT or code == gdb.TYPE_CODE_CHAR:
        signed = t.is_signed if hasattr(t, "is_signed") else "unsigned" not in str(t)  # (gdb before 12)
        name = str(t)
        if "char" in name:  # char, signed char, unsigned char: the text itself
            return name
        return "%sint%d" % ("" if signed else "u", 8 * t.sizeof)
    if code == gdb.TYPE_CODE_FLT:
        return "float%d" % (8 * t.sizeof)
    if code == gdb.TYPE_CODE_VOID:
        return "void"
    return "%s(code %d, %d bytes)" % (str(t), code, t.sizeof)


def members(type_, prefix, base, out):
    """One line per member: offset, size, path, and its canonical type (nested structs and unions
    opened member by member)."""
    t = type_.strip_typedefs().unqualified()
    for f in t.fields():
        offset = base + f.bitpos // 8
        path = prefix + (f.name or "(anonymous)")
        if f.bitsize:  # a bitfield: its bit offset and width
            path += " bits %d/%d" % (f.bitpos % 8, f.bitsize)
        ft = f.type.strip_typedefs().unqualified()
        if ft.code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
            kind = "struct" if ft.code == gdb.TYPE_CODE_STRUCT else "union"
            out.append("%6d %5d %s: %s" % (offset, ft.sizeof, path, kind))
            members(ft, path + ".", offset, out)
        else:
            out.append("%6d %5d %s: %s" % (offset, ft.sizeof, path, describe(ft)))


def main():
    lines = []
    for name in os.environ["ABI_TYPES"].split():
        try:
            t = gdb.lookup_type(name)
        except gdb.error:
            lines.append("== %s missing" % name)
            continue
        lines.append("== %s %d bytes" % (name, t.strip_typedefs().sizeof))
        members(t, "", 0, lines)
    with open(os.environ["ABI_OUT"], "w") as out:
        out.write("\n".join(lines) + "\n")


main()

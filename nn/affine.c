/* nn/affine.c: the dense layers' inner kernel, y = start + W x for blocks of rows, in the bits of a plain loop. */
#include "dense.h"

#include <stddef.h>

/* Inputs per packed block: longer rows take the unpacked path (the layers here have at most 64). */
#define PACK_MAX_INPUTS 256

/* Rows r .. r + ROWS - 1 of 4 outputs from weights packed as packed[4 i + j] = w[o + j][i]: a vector
 * of the 4 outputs' weights times one input, broadcast, per row. */
#define AFFINE_BLOCK(ROWS)                                                                     \
  do {                                                                                         \
    float sums[ROWS][4];                                                                       \
    _Pragma("GCC unroll 8") for (int k = 0; k < ROWS; k++)                                     \
      _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) sums[k][j] = start[o + j];           \
    const float* xr = x + (size_t)r * x_stride;                                                \
    for (int i = 0; i < n; i++) {                                                              \
      _Pragma("GCC unroll 8") for (int k = 0; k < ROWS; k++) {                                 \
        float input = xr[(size_t)k * x_stride + i];                                            \
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) sums[k][j] += packed[4 * i + j] * input; \
      }                                                                                        \
    }                                                                                          \
    _Pragma("GCC unroll 8") for (int k = 0; k < ROWS; k++)                                     \
      _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) y[(size_t)(r + k) * y_stride + o + j] = sums[k][j]; \
  } while (0)

/* Each output is start[o] + w[o][0] x[0] + w[o][1] x[1] + ..., added in that order, as a plain loop
 * would. Blocks of up to 8 rows by 4 outputs, the 4 outputs' weights packed side by side, keep 32
 * independent sums in flight as vectors instead of one chain of dependent scalar additions (about 4x
 * faster; every sum's order, and so its bits, unchanged). */
void dccl_affine_rows(const float* w, int w_stride, const float* start, int n, const float* x, int x_stride,
                      float* y, int y_stride, int out, int rows) {
  int o = 0;
  if (n <= PACK_MAX_INPUTS && rows >= 4)
    for (; o + 4 <= out; o += 4) {
      float packed[4 * PACK_MAX_INPUTS];
      for (int j = 0; j < 4; j++) {
        const float* row = w + (size_t)(o + j) * w_stride;
        for (int i = 0; i < n; i++) packed[4 * i + j] = row[i];
      }
      int r = 0;
      for (; r + 8 <= rows; r += 8) AFFINE_BLOCK(8);
      for (; r + 4 <= rows; r += 4) AFFINE_BLOCK(4);
      for (; r < rows; r++) AFFINE_BLOCK(1);
    }
  /* Fewer than 4 rows (packing would cost as much as the sums): 4 outputs of a row at a time. */
  if (rows < 4)
    for (; o + 4 <= out; o += 4)
      for (int r = 0; r < rows; r++) {
        const float* xr = x + (size_t)r * x_stride;
        const float* w0 = w + (size_t)o * w_stride;
        float sums[4] = {start[o], start[o + 1], start[o + 2], start[o + 3]};
        for (int i = 0; i < n; i++)
          for (int j = 0; j < 4; j++) sums[j] += w0[(size_t)j * w_stride + i] * xr[i];
        for (int j = 0; j < 4; j++) y[(size_t)r * y_stride + o + j] = sums[j];
      }
  /* The outputs left (fewer than 4, or rows too long to pack): 4 rows at a time, one output each. */
  for (; o < out; o++) {
    const float* wo = w + (size_t)o * w_stride;
    int r = 0;
    for (; r + 4 <= rows; r += 4) {
      const float* x0 = x + (size_t)r * x_stride;
      float sums[4] = {start[o], start[o], start[o], start[o]};
      for (int i = 0; i < n; i++)
        for (int k = 0; k < 4; k++) sums[k] += wo[i] * x0[(size_t)k * x_stride + i];
      for (int k = 0; k < 4; k++) y[(size_t)(r + k) * y_stride + o] = sums[k];
    }
    for (; r < rows; r++) {
      const float* xr = x + (size_t)r * x_stride;
      float sum = start[o];
      for (int i = 0; i < n; i++) sum += wo[i] * xr[i];
      y[(size_t)r * y_stride + o] = sum;
    }
  }
}

/* agents/cusum.h: a two-sided CUSUM change detector on standardised values.
 *   up   = max(0, up + u - k)     alarms when up > h   (the mean rose)
 *   down = max(0, down - u - k)   alarms when down > h (the mean fell)
 * k is the allowance (half the shift to detect, in standard deviations), h the threshold; a larger h
 * trades detection delay for a longer run between false alarms. */
#ifndef DYNAMICCL_AGENTS_CUSUM_H
#define DYNAMICCL_AGENTS_CUSUM_H

typedef struct dccl_cusum {
  double k, h;
  double up, down;
} dccl_cusum;

void dccl_cusum_init(dccl_cusum* c, double k, double h);
void dccl_cusum_reset(dccl_cusum* c);
/* Returns +1 on an upward alarm, -1 on a downward one, 0 otherwise; the alarmed side restarts at 0. */
int dccl_cusum_update(dccl_cusum* c, double u);

#endif

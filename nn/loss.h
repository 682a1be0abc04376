/* nn/loss.h: the Huber loss (quadratic within delta of the target, linear beyond) and its gradient. */
#ifndef DYNAMICCL_NN_LOSS_H
#define DYNAMICCL_NN_LOSS_H

/* Mean Huber loss over n predictions; writes d loss / d prediction into gradient (when not NULL). */
double dccl_huber(const float* prediction, const float* target, float* gradient, int n, double delta);

#endif

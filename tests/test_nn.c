/* tests/test_nn.c: every gradient of the neural-network layer checked against central finite
 * differences (dense, MLP through ReLU, LSTM through time, Huber), Adam and clipping, both networks
 * actually learning a small task, and the blocked affine kernel bit for bit against a plain loop. */
#include "../nn/dense.h"
#include "../nn/loss.h"
#include "../nn/lstm.h"
#include "test.h"

/* Compares analytic gradients in params->grads with finite differences of loss(). */
static void check_gradients(dccl_params* p, double (*loss)(void*), void* context, const char* what) {
  dccl_params_zero_grads(p);
  loss(context); /* the loss function also runs the backward pass, filling grads */
  float* analytic = malloc(p->count * sizeof(float));
  memcpy(analytic, p->grads, p->count * sizeof(float));
  int bad = 0;
  for (size_t i = 0; i < p->count; i++) {
    float keep = p->values[i];
    const float h = 1e-2f;
    p->values[i] = keep + h;
    dccl_params_zero_grads(p);
    double up = loss(context);
    p->values[i] = keep - h;
    dccl_params_zero_grads(p);
    double down = loss(context);
    p->values[i] = keep;
    double numeric = (up - down) / (2 * h);
    double tolerance = 2e-3 + 2e-2 * fabs(numeric);
    if (fabs(numeric - analytic[i]) > tolerance) {
      if (bad < 5) fprintf(stderr, "  %s: parameter %zu analytic %.6f numeric %.6f\n", what, i, analytic[i], numeric);
      bad++;
    }
  }
  CHECK_MSG(bad == 0, "%s: %d of %zu gradients wrong", what, bad, p->count);
  free(analytic);
}

/* ---- MLP ---- */
typedef struct mlp_case {
  dccl_params params;
  dccl_mlp mlp;
  float x[4 * 5], target[4 * 3];
} mlp_case;

static double mlp_loss(void* argument) {
  mlp_case* c = argument;
  const float* y = dccl_mlp_forward(&c->mlp, c->x, 4);
  float gradient[4 * 3];
  double loss = dccl_huber(y, c->target, gradient, 12, 0.5);
  dccl_mlp_backward(&c->mlp, &c->params, gradient, NULL, 4);
  return loss;
}

static void test_mlp_gradients(void) {
  static mlp_case c;
  int sizes[] = {5, 7, 6, 3};
  dccl_rng rng;
  dccl_rng_seed(&rng, 3);
  CHECK(dccl_params_init(&c.params, dccl_mlp_param_count(sizes, 3)) == 0);
  CHECK(dccl_mlp_init(&c.mlp, &c.params, sizes, 3, 4, &rng) == 0);
  CHECK(c.params.used == c.params.count);
  for (int i = 0; i < 20; i++) c.x[i] = (float)(dccl_rng_uniform(&rng) * 2 - 1);
  for (int i = 0; i < 12; i++) c.target[i] = (float)(dccl_rng_uniform(&rng) * 4 - 2);
  /* Keep hidden units away from ReLU kinks, where finite differences are meaningless. */
  for (size_t i = 0; i < c.params.count; i++) c.params.values[i] += (float)(0.05 * dccl_rng_normal(&rng));
  check_gradients(&c.params, mlp_loss, &c, "mlp");
  /* Input gradient against finite differences too. */
  const float* y = dccl_mlp_forward(&c.mlp, c.x, 4);
  float g[12], dx[20];
  dccl_huber(y, c.target, g, 12, 0.5);
  dccl_params_zero_grads(&c.params);
  dccl_mlp_backward(&c.mlp, &c.params, g, dx, 4);
  for (int i = 0; i < 20; i++) {
    float keep = c.x[i];
    c.x[i] = keep + 1e-2f;
    double up = dccl_huber(dccl_mlp_forward(&c.mlp, c.x, 4), c.target, NULL, 12, 0.5);
    c.x[i] = keep - 1e-2f;
    double down = dccl_huber(dccl_mlp_forward(&c.mlp, c.x, 4), c.target, NULL, 12, 0.5);
    c.x[i] = keep;
    CHECK_NEAR(dx[i], (up - down) / 2e-2, 2e-3 + 2e-2 * fabs((up - down) / 2e-2));
  }
  dccl_mlp_free(&c.mlp);
  dccl_params_free(&c.params);
}

/* ---- LSTM + dense head over a sequence, loss on every step ---- */
typedef struct lstm_case {
  dccl_params params;
  dccl_lstm lstm;
  dccl_dense head;
  float xs[6 * 2 * 3], targets[6 * 2], h0[2 * 4], c0[2 * 4];
} lstm_case;

static double lstm_loss(void* argument) {
  lstm_case* c = argument;
  const int T = 6, B = 2, H = 4;
  const float* hs = dccl_lstm_forward(&c->lstm, c->xs, T, B, c->h0, c->c0);
  float out[12], g[12], dh[6 * 2 * 4];
  dccl_dense_forward(&c->head, hs, out, T * B);
  double loss = dccl_huber(out, c->targets, g, T * B, 1.0);
  dccl_dense_backward(&c->head, &c->params, hs, g, dh, T * B);
  (void)H;
  dccl_lstm_backward(&c->lstm, &c->params, dh, T, B);
  return loss;
}

static void test_lstm_gradients(void) {
  static lstm_case c;
  dccl_rng rng;
  dccl_rng_seed(&rng, 5);
  CHECK(dccl_params_init(&c.params, dccl_lstm_param_count(3, 4) + dccl_dense_param_count(4, 1)) == 0);
  CHECK(dccl_lstm_init(&c.lstm, &c.params, 3, 4, 6, 2, &rng) == 0);
  CHECK(dccl_dense_init(&c.head, &c.params, 4, 1, &rng) == 0);
  for (int i = 0; i < 36; i++) c.xs[i] = (float)(dccl_rng_uniform(&rng) * 2 - 1);
  for (int i = 0; i < 12; i++) c.targets[i] = (float)(dccl_rng_uniform(&rng) - 0.5);
  for (int i = 0; i < 8; i++) {
    c.h0[i] = (float)(0.3 * dccl_rng_normal(&rng));
    c.c0[i] = (float)(0.3 * dccl_rng_normal(&rng));
  }
  check_gradients(&c.params, lstm_loss, &c, "lstm");
  /* The streaming step agrees with the sequence forward. */
  float h[4], cs[4];
  memcpy(h, c.h0, sizeof(h));
  memcpy(cs, c.c0, sizeof(cs));
  const float* hs = dccl_lstm_forward(&c.lstm, c.xs, 6, 2, c.h0, c.c0);
  for (int t = 0; t < 6; t++) {
    dccl_lstm_step(&c.lstm, c.xs + (size_t)t * 2 * 3, h, cs);
    for (int k = 0; k < 4; k++) CHECK_NEAR(h[k], hs[(size_t)t * 2 * 4 + k], 1e-6);
  }
  dccl_lstm_free(&c.lstm);
  dccl_params_free(&c.params);
}

static void test_huber(void) {
  float p[4] = {0.0f, 3.0f, -2.0f, 0.4f}, t[4] = {0.5f, 0.0f, 0.0f, 0.4f}, g[4];
  double loss = dccl_huber(p, t, g, 4, 1.0);
  CHECK_NEAR(loss, (0.125 + 2.5 + 1.5 + 0.0) / 4, 1e-6);
  CHECK_NEAR(g[0], -0.5 / 4, 1e-6);
  CHECK_NEAR(g[1], 1.0 / 4, 1e-6);
  CHECK_NEAR(g[2], -1.0 / 4, 1e-6);
  CHECK_NEAR(g[3], 0.0, 1e-6);
}

static void test_clip_and_blend(void) {
  dccl_params a, b;
  CHECK(dccl_params_init(&a, 2) == 0 && dccl_params_init(&b, 2) == 0);
  a.grads[0] = 3;
  a.grads[1] = 4;
  CHECK_NEAR(dccl_params_clip(&a, 1.0), 5.0, 1e-9);
  CHECK_NEAR(a.grads[0], 0.6, 1e-6);
  CHECK_NEAR(a.grads[1], 0.8, 1e-6);
  /* An overflowed gradient is dropped: scaled, it would have made every weight NaN (0 * inf); the
   * Adam step after it leaves the weights finite. */
  a.grads[0] = INFINITY;
  a.grads[1] = 1;
  CHECK(!isfinite(dccl_params_clip(&a, 1.0)));
  CHECK(a.grads[0] == 0 && a.grads[1] == 0);
  dccl_params_adam(&a, 1e-3, 0.9, 0.999, 1e-8);
  CHECK(isfinite(a.values[0]) && isfinite(a.values[1]));
  a.grads[0] = NAN;
  CHECK(!isfinite(dccl_params_clip(&a, 1.0)));
  CHECK(a.grads[0] == 0);
  a.values[0] = 10;
  b.values[0] = 0;
  dccl_params_blend(&b, &a, 0.25);
  CHECK_NEAR(b.values[0], 2.5, 1e-6);
  CHECK(dccl_params_take(&a, 3) == NULL);
  dccl_params_free(&a);
  dccl_params_free(&b);
}

/* An MLP trained with Adam fits a smooth function; an LSTM learns to predict a sine one step ahead. */
static void test_training_converges(void) {
  dccl_rng rng;
  dccl_rng_seed(&rng, 9);
  int sizes[] = {2, 32, 32, 1};
  dccl_params p;
  dccl_mlp mlp;
  CHECK(dccl_params_init(&p, dccl_mlp_param_count(sizes, 3)) == 0);
  CHECK(dccl_mlp_init(&mlp, &p, sizes, 3, 64, &rng) == 0);
  float x[128], y[64], g[64];
  double loss = 0;
  for (int step = 0; step < 3000; step++) {
    for (int i = 0; i < 64; i++) {
      x[2 * i] = (float)(dccl_rng_uniform(&rng) * 2 - 1);
      x[2 * i + 1] = (float)(dccl_rng_uniform(&rng) * 2 - 1);
      y[i] = (float)(sin(3 * x[2 * i]) * x[2 * i + 1]);
    }
    loss = dccl_huber(dccl_mlp_forward(&mlp, x, 64), y, g, 64, 1.0);
    dccl_mlp_backward(&mlp, &p, g, NULL, 64);
    dccl_params_clip(&p, 5.0);
    dccl_params_adam(&p, 3e-3, 0.9, 0.999, 1e-8);
  }
  CHECK_MSG(loss < 0.005, "MLP loss %.4f", loss);
  dccl_mlp_free(&mlp);
  dccl_params_free(&p);

  dccl_lstm lstm;
  dccl_dense head;
  CHECK(dccl_params_init(&p, dccl_lstm_param_count(1, 12) + dccl_dense_param_count(12, 1)) == 0);
  CHECK(dccl_lstm_init(&lstm, &p, 1, 12, 24, 16, &rng) == 0);
  CHECK(dccl_dense_init(&head, &p, 12, 1, &rng) == 0);
  static float xs[24 * 16], targets[24 * 16], out[24 * 16], grad[24 * 16], dh[24 * 16 * 12];
  for (int step = 0; step < 1500; step++) {
    for (int b = 0; b < 16; b++) {
      double phase = dccl_rng_uniform(&rng) * 6.28;
      for (int t = 0; t < 24; t++) {
        xs[t * 16 + b] = (float)sin(phase + 0.5 * t);
        targets[t * 16 + b] = (float)sin(phase + 0.5 * (t + 1));
      }
    }
    const float* hs = dccl_lstm_forward(&lstm, xs, 24, 16, NULL, NULL);
    dccl_dense_forward(&head, hs, out, 24 * 16);
    loss = dccl_huber(out, targets, grad, 24 * 16, 1.0);
    dccl_dense_backward(&head, &p, hs, grad, dh, 24 * 16);
    dccl_lstm_backward(&lstm, &p, dh, 24, 16);
    dccl_params_clip(&p, 5.0);
    dccl_params_adam(&p, 1e-2, 0.9, 0.999, 1e-8);
  }
  /* Once a few steps have revealed the phase, the forecast is far better than repeating the input. */
  const float* hs = dccl_lstm_forward(&lstm, xs, 24, 16, NULL, NULL);
  dccl_dense_forward(&head, hs, out, 24 * 16);
  double model_error = 0, naive_error = 0;
  for (int i = 4 * 16; i < 24 * 16; i++) {
    model_error += (out[i] - targets[i]) * (out[i] - targets[i]);
    naive_error += (xs[i] - targets[i]) * (xs[i] - targets[i]);
  }
  CHECK_MSG(model_error < 0.05 * naive_error, "LSTM error %.4f vs naive %.4f", model_error, naive_error);
  dccl_lstm_free(&lstm);
  dccl_params_free(&p);
}

/* ---- the blocked kernel ---- */
/* dccl_affine_rows must give the bits a plain loop gives (each sum in order of i), for every shape
 * around its 8- and 4-row and 4-output blocks, with strides wider than the rows, and for rows too long
 * to pack (over 256 inputs). */
static void test_affine_rows_matches_plain_loop(void) {
  enum { MAX_N = 300, MAX_OUT = 10, MAX_ROWS = 10, W_STRIDE = MAX_N + 3, X_STRIDE = MAX_N + 1, Y_STRIDE = 12 };
  static float w[MAX_OUT * W_STRIDE], x[MAX_ROWS * X_STRIDE];
  float start[MAX_OUT], y[MAX_ROWS * Y_STRIDE], expected[MAX_ROWS * Y_STRIDE];
  const int lengths[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 64, 256, 257, 300};
  dccl_rng rng;
  dccl_rng_seed(&rng, 11);
  /* Values over several magnitudes, so that a different order of additions changes low bits. */
  for (int i = 0; i < MAX_OUT * W_STRIDE; i++) w[i] = (float)((dccl_rng_uniform(&rng) - 0.5) * pow(10, (i % 7) - 3));
  for (int i = 0; i < MAX_OUT; i++) start[i] = (float)(dccl_rng_uniform(&rng) - 0.5);
  for (int i = 0; i < MAX_ROWS * X_STRIDE; i++) x[i] = (float)((dccl_rng_uniform(&rng) - 0.5) * pow(10, (i % 5) - 2));
  int mismatches = 0, cases = 0;
  for (size_t length = 0; length < sizeof(lengths) / sizeof(lengths[0]); length++)
    for (int out = 1; out <= MAX_OUT; out++)
      for (int rows = 1; rows <= MAX_ROWS; rows++) {
        int n = lengths[length];
        for (int i = 0; i < MAX_ROWS * Y_STRIDE; i++) y[i] = expected[i] = -7.0f; /* untouched outside */
        for (int r = 0; r < rows; r++)
          for (int o = 0; o < out; o++) {
            float sum = start[o];
            for (int i = 0; i < n; i++) sum += w[o * W_STRIDE + i] * x[r * X_STRIDE + i];
            expected[r * Y_STRIDE + o] = sum;
          }
        dccl_affine_rows(w, W_STRIDE, start, n, x, X_STRIDE, y, Y_STRIDE, out, rows);
        if (memcmp(y, expected, sizeof(y)) != 0) mismatches++;
        cases++;
      }
  CHECK_MSG(mismatches == 0, "%d of %d shapes differ from the plain loop", mismatches, cases);
}

int main(void) {
  RUN(test_affine_rows_matches_plain_loop);
  RUN(test_mlp_gradients);
  RUN(test_lstm_gradients);
  RUN(test_huber);
  RUN(test_clip_and_blend);
  RUN(test_training_converges);
  TEST_SUMMARY();
}

// Row kernels of the fused synthesized attention (synthformer.attention.fused), one pass per row.
//
// The PyTorch path runs a block's masked softmax, dropout and dS = P (dP - delta) as several whole-block passes
// (fill, softmax, zero fully masked rows, keep mask, scale, subtract, multiply). Here each row of the block is
// read once into L1 and everything is done there. The GEMMs stay in torch.
//
// Ops (registered as torch.ops.synthformer_fused.*; shapes (s, h, T, S), the last axis contiguous):
//   probs_(logits, mask?, keep?, scale): logits <- dropout(softmax(mask(logits))) in place.
//   grads_(logits, mask?, p, dp, delta, keep?, scale): recompute P from logits (bitwise the forward's: the same
//     row function), p <- P * keep * scale (what multiplied V), dp <- P * (dp * keep * scale - delta) (dS).
// Masked entries get probability 0 and a fully masked row is all zeros, as masking.masked_softmax. ``logits``
// and ``mask`` may broadcast over the first three axes (stride 0): R's logits are shared by a block's samples.
//
// Built by torch.utils.cpp_extension.load on first use (fused_backends.py); only light headers, so the build
// stays short (no pybind11: the ops go through the dispatcher).

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace {

// exp(x) for x <= 0, written so that the compiler vectorizes it (std::exp on float is a scalar libm call).
// Range reduction x = n ln2 + r, |r| <= ln2 / 2, then a degree-6 polynomial for exp(r) (the Cephes expf
// coefficients, about 1 ulp) scaled by 2^n built in the exponent bits. Below ln(FLT_MIN) the result is 0.
inline float exp_nonpos(float x) {
  const bool tiny = x < -87.3365f;
  x = std::max(x, -87.3365f);
  const float n = std::floor(x * 1.44269504088896341f + 0.5f);
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;  // ln2 split in two for an exact n ln2
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;  // n >= -126: a normal power of two
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return tiny ? 0.0f : p * scale;
}

inline double exp_nonpos(double x) { return std::exp(x); }  // float64 (tests): the libm exp, exact to rounding

// Reductions run over this many independent lanes (64 bytes of float: one AVX-512 register, two AVX2 ones),
// written out so that GCC vectorizes them without -ffast-math (which would also reorder the rest) and without
// an ``omp simd`` reduction (which it keeps in memory); the order of the sums is then fixed by the code.
constexpr int64_t LANES = 16;

// Logit k of a row, or -inf where masked.
template <typename T, bool Masked>
inline T allowed(const T* src, const uint8_t* mask, int64_t k) {
  if constexpr (Masked) {
    return mask[k] ? -std::numeric_limits<T>::infinity() : src[k];
  } else {
    return src[k];
  }
}

// softmax of one row of n logits into out (out may be src), masked entries 0, a fully masked row all 0.
// Not inlined: one compiled copy serves the forward and the backward, so both get bitwise the same P.
template <typename T, bool Masked>
__attribute__((noinline)) void softmax_row(const T* src, const uint8_t* mask, int64_t n, T* out) {
  T lane[LANES];
  std::fill(lane, lane + LANES, -std::numeric_limits<T>::infinity());
  int64_t k = 0;
  for (; k + LANES <= n; k += LANES) {
    for (int64_t l = 0; l < LANES; ++l) lane[l] = std::max(lane[l], allowed<T, Masked>(src, mask, k + l));
  }
  for (; k < n; ++k) lane[0] = std::max(lane[0], allowed<T, Masked>(src, mask, k));
  const T top = *std::max_element(lane, lane + LANES);
  if (top == -std::numeric_limits<T>::infinity()) {  // every key masked: zeros, as masked_softmax
    std::fill(out, out + n, T(0));
    return;
  }
  for (k = 0; k < n; ++k) {  // same-index reads and writes: vectorizes even when out is src
    // clamped at 0: a masked logit may exceed the row's max (its exp is then discarded)
    T e = exp_nonpos(std::min(src[k] - top, T(0)));
    if constexpr (Masked) e *= T(mask[k] == 0);  // a product, not a branch: it vectorizes
    out[k] = e;
  }
  std::fill(lane, lane + LANES, T(0));  // the sum in a pass of its own over the row, now in L1
  for (k = 0; k + LANES <= n; k += LANES) {
    for (int64_t l = 0; l < LANES; ++l) lane[l] += out[k + l];
  }
  for (; k < n; ++k) lane[0] += out[k];
  T sum = 0;
  for (int64_t l = 0; l < LANES; ++l) sum += lane[l];
  const T inv = T(1) / sum;
  for (k = 0; k < n; ++k) out[k] *= inv;
}

// The row softmax with or without a mask (nullptr).
template <typename T>
inline void softmax_row(const T* src, const uint8_t* mask, int64_t n, T* out) {
  if (mask) {
    softmax_row<T, true>(src, mask, n, out);
  } else {
    softmax_row<T, false>(src, mask, n, out);
  }
}

// Row r of a (s, h, T, ·) tensor given its strides (stride 0 on a broadcast axis).
struct Rows {
  int64_t h, t, s0, s1, s2;
  Rows(const at::Tensor& x, int64_t heads, int64_t queries)
      : h(heads), t(queries), s0(x.stride(0)), s1(x.stride(1)), s2(x.stride(2)) {}
  int64_t offset(int64_t r) const { return (r / (h * t)) * s0 + ((r / t) % h) * s1 + (r % t) * s2; }
};

// x expanded to (s, h, T, S) with a contiguous last axis (a copy only when the last axis is strided).
at::Tensor rows_of(const at::Tensor& x, at::IntArrayRef shape) {
  at::Tensor y = x.expand(shape);
  return (y.size(3) > 1 && y.stride(3) != 1) ? y.contiguous() : y;
}

void check(const at::Tensor& x, const char* name) {
  TORCH_CHECK(x.device().is_cpu(), name, " must be on the CPU");
  TORCH_CHECK(x.dim() == 4, name, " must be 4-D (s, h, T, S), got ", x.dim(), "-D");
}

// A bool tensor's data as bytes: GCC does not vectorize loads of bool, and a bool is one byte holding 0 or 1.
const uint8_t* bytes(const at::Tensor& x) { return reinterpret_cast<const uint8_t*>(x.data_ptr<bool>()); }

// Rows per task of at::parallel_for: a few kB of work each, so the split pays for itself.
constexpr int64_t GRAIN = 16;

// A block's optional masks, row by row: the disallowed pairs (broadcast over samples, heads) and dropout's keep
// mask ((s, h, T, S), contiguous), each as bytes or nullptr when absent.
struct RowMasks {
  const uint8_t* mask;
  const uint8_t* keep;
  Rows mr;
  int64_t n;
  RowMasks(const at::Tensor& m, const at::Tensor& kp, const at::Tensor& like)
      : mask(m.defined() ? bytes(m) : nullptr),
        keep(kp.defined() ? bytes(kp) : nullptr),
        mr(m.defined() ? m : like, like.size(1), like.size(2)),
        n(like.size(3)) {}
  const uint8_t* mask_row(int64_t r) const { return mask ? mask + mr.offset(r) : nullptr; }
  const uint8_t* keep_row(int64_t r) const { return keep ? keep + r * n : nullptr; }
};

// fn(r) for every row r of a (s, h, T, ·) block, split over torch's intra-op threads.
template <typename F>
void for_rows(const at::Tensor& like, const F& fn) {
  at::parallel_for(0, like.size(0) * like.size(1) * like.size(2), GRAIN, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) fn(r);
  });
}

template <typename T>
void probs_rows(const at::Tensor& logits, const at::Tensor& m, const at::Tensor& kp, double scale) {
  const int64_t n = logits.size(3);
  const Rows lr(logits, logits.size(1), logits.size(2));
  const RowMasks masks(m, kp, logits);
  T* base = logits.data_ptr<T>();
  const T kept = static_cast<T>(scale);
  for_rows(logits, [&](int64_t r) {
    T* row = base + lr.offset(r);
    softmax_row(row, masks.mask_row(r), n, row);
    if (const uint8_t* k = masks.keep_row(r)) {  // dropout in the same pass: kept entries / (1 - p), others 0
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) row[j] = k[j] ? row[j] * kept : T(0);
    }
  });
}

template <typename T>
void grads_rows(const at::Tensor& src, const at::Tensor& m, const at::Tensor& p, const at::Tensor& dp,
                const at::Tensor& delta, const at::Tensor& kp, double scale) {
  const int64_t n = p.size(3);
  const Rows sr(src, p.size(1), p.size(2)), dr(delta, p.size(1), p.size(2));
  const RowMasks masks(m, kp, p);
  const T* sbase = src.data_ptr<T>();
  const T* dbase = delta.data_ptr<T>();
  T* pbase = p.data_ptr<T>();
  T* gbase = dp.data_ptr<T>();
  const T kept = static_cast<T>(scale);
  for_rows(p, [&](int64_t r) {
    T* prow = pbase + r * n;
    T* grow = gbase + r * n;
    softmax_row(sbase + sr.offset(r), masks.mask_row(r), n, prow);
    const T d = dbase[dr.offset(r)];
    if (const uint8_t* k = masks.keep_row(r)) {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) {
        const T f = k[j] ? kept : T(0);  // d(dropped)/dP: the keep mask times 1 / (1 - p)
        grow[j] = prow[j] * (grow[j] * f - d);
        prow[j] *= f;
      }
    } else {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) grow[j] = prow[j] * (grow[j] - d);
    }
  });
}

at::Tensor probs_(at::Tensor logits, const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& keep,
                  double scale) {
  check(logits, "logits");
  TORCH_CHECK(logits.stride(3) == 1, "logits must have a contiguous last axis");
  const at::Tensor m = mask ? rows_of(*mask, logits.sizes()) : at::Tensor();
  const at::Tensor kp = keep ? keep->contiguous() : at::Tensor();
  TORCH_CHECK(!kp.defined() || kp.sizes() == logits.sizes(), "keep must have the logits' shape");
  if (logits.scalar_type() == at::kFloat) {
    probs_rows<float>(logits, m, kp, scale);
  } else {
    TORCH_CHECK(logits.scalar_type() == at::kDouble, "probs_ takes float32 or float64 logits");
    probs_rows<double>(logits, m, kp, scale);
  }
  return logits;
}

void grads_(const at::Tensor& logits, const std::optional<at::Tensor>& mask, at::Tensor p, at::Tensor dp,
            const at::Tensor& delta, const std::optional<at::Tensor>& keep, double scale) {
  check(p, "p");
  check(dp, "dp");
  TORCH_CHECK(p.is_contiguous() && dp.is_contiguous(), "p and dp must be contiguous");
  TORCH_CHECK(logits.scalar_type() == p.scalar_type() && dp.scalar_type() == p.scalar_type() &&
                  delta.scalar_type() == p.scalar_type(),
              "logits, p, dp and delta must share one dtype");
  const auto shape = p.sizes();
  const at::Tensor src = rows_of(logits, shape);  // may alias p: each row is read before it is written
  const at::Tensor m = mask ? rows_of(*mask, shape) : at::Tensor();
  const at::Tensor kp = keep ? keep->contiguous() : at::Tensor();
  TORCH_CHECK(!kp.defined() || kp.sizes() == shape, "keep must have p's shape");
  const at::Tensor dl = delta.expand({shape[0], shape[1], shape[2], 1});
  if (p.scalar_type() == at::kFloat) {
    grads_rows<float>(src, m, p, dp, dl, kp, scale);
  } else {
    TORCH_CHECK(p.scalar_type() == at::kDouble, "grads_ takes float32 or float64 tensors");
    grads_rows<double>(src, m, p, dp, dl, kp, scale);
  }
}

}  // namespace

TORCH_LIBRARY(synthformer_fused, lib) {
  lib.def("probs_(Tensor(a!) logits, Tensor? mask, Tensor? keep, float scale) -> Tensor(a!)");
  lib.def("grads_(Tensor logits, Tensor? mask, Tensor(a!) p, Tensor(b!) dp, Tensor delta, Tensor? keep, "
          "float scale) -> ()");
}

TORCH_LIBRARY_IMPL(synthformer_fused, CPU, lib) {
  lib.impl("probs_", &probs_);
  lib.impl("grads_", &grads_);
}

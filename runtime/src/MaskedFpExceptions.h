// The nanny's arithmetic runs on the training's own threads, and must never trap there.
#ifndef MPNANNY_RUNTIME_MASKEDFPEXCEPTIONS_H
#define MPNANNY_RUNTIME_MASKEDFPEXCEPTIONS_H

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define MPNANNY_FP_STATE_IS_MXCSR 1
#else
#include <cfenv>
#endif

namespace mpnanny {

/// Masks every floating-point exception on this thread for the guard's life, and puts the
/// thread's state back as it was after (control bits and raised flags alike). A training that
/// traps on exceptions, as one does to find where a NaN starts (feenableexcept(FE_INVALID)),
/// must not be stopped by the nanny's own arithmetic on the values it watches: a sum lane that
/// meets +inf and -inf, a compare with a NaN. On x86 only MXCSR is saved: the nanny does no x87
/// arithmetic, and MXCSR is read in about 6 ns where the whole floating-point environment takes
/// 130 ns.
class MaskedFpExceptions {
 public:
#ifdef MPNANNY_FP_STATE_IS_MXCSR
  MaskedFpExceptions() : saved_(_mm_getcsr()), masked_(saved_ | kAllExceptionMasks) { _mm_setcsr(masked_); }
  ~MaskedFpExceptions() { _mm_setcsr(saved_); }
  /// MXCSR as the guard set it.
  unsigned masked_state() const { return masked_; }
#else
  MaskedFpExceptions() { std::feholdexcept(&saved_); }
  ~MaskedFpExceptions() { std::fesetenv(&saved_); }
#endif
  MaskedFpExceptions(const MaskedFpExceptions&) = delete;
  MaskedFpExceptions& operator=(const MaskedFpExceptions&) = delete;

 private:
#ifdef MPNANNY_FP_STATE_IS_MXCSR
  static constexpr unsigned kAllExceptionMasks = 0x1f80;  // MXCSR bits 7 to 12
  unsigned saved_;
  unsigned masked_;
#else
  std::fenv_t saved_;
#endif
};

}  // namespace mpnanny

#endif

// A file that takes minutes to compile: a constant evaluated in billions of steps (with
// -fconstexpr-steps raised). The per-file time limit must stop its scan.
constexpr long long spin() {
  long long s = 0;
  for (long long i = 0; i < 4000000000LL; ++i)
    s += i % 7;
  return s;
}
static_assert(spin() > 0);

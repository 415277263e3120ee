// Fuzzes the runtime's sites file reader (runtime/src/SiteVerifier, load_sites) and what the
// verifier then does with the sites it read. Contract (SiteVerifier.h): load_sites never throws,
// and a file it cannot use gives no sites and one warning; nothing crashes, leaks or hangs.
#include <cstdint>
#include <limits>
#include <string>

#include "FuzzSupport.h"
#include "SiteVerifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const mpnanny::fuzz::ScratchDir dir("sites");
  const std::string file = dir.path() + "/sites.json";
  mpnanny::fuzz::write_file(file, data, size);
  // check_sources opens the files the sites name: the fuzzer may name any path.
  for (const bool check_sources : {false, true}) {
    mpnanny::SitesFile sites = mpnanny::load_sites(file, check_sources);
    if (!sites.warning.empty() && sites.warning.rfind("mpnanny: ", 0) != 0)
      mpnanny::fuzz::broken("a warning without the mpnanny: prefix: " + sites.warning);
    mpnanny::SiteVerifier verifier(sites.sites, mpnanny::Precision::FP16);
    mpnanny::TensorStats extreme;
    extreme.max_abs = std::numeric_limits<double>::infinity();
    extreme.min_abs_nonzero = 1e-30;
    extreme.nan_count = 1;
    extreme.fp16_overflow = 1;
    extreme.fp16_flush = 1;
    int64_t step = 0;
    for (const auto& site : verifier.sites()) {
      for (const auto& op : site.aten_ops) {
        if (auto index = verifier.match(site.file, site.line, op)) verifier.observe(*index, step++, extreme);
      }
      if (auto index = verifier.match(site.file, site.line, "aten::softmax")) verifier.observe(*index, step++, {});
    }
    mpnanny::SiteVerifier::format_table(verifier.verdicts());
  }
  return 0;
}

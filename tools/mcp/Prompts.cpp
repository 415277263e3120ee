//===--- Prompts.cpp - mpnanny-mcp -----------------------------------------===//
//
// The two prompts that walk an agent through the tools (review a model, diagnose a
// run) and the server's instructions.
//
//===----------------------------------------------------------------------===//
#include "Tools.h"
#include "Vocabulary.h"

using nlohmann::json;

namespace mpnanny::mcp {

namespace {

/// A tool's arguments as a prompt shows them: JSON, so that a quote in a path stays a quote.
std::string argumentsText(const json &Args) {
  return Args.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace

std::vector<Prompt> makePrompts() {
  std::vector<Prompt> Out;
  Out.push_back(
      {"review-model-for-mixed-precision",
       "Review a model for fp16/bf16 training",
       "Scan a LibTorch model, explain each finding, propose fixes and plan the run-time check",
       {{"path", "The model's source file (or a build folder with compile_commands.json)", true},
        {"precision", "fp16, bf16, autocast-fp16 or autocast-bf16 (default: inferred)", false}},
       [](const json &A) {
         std::string Path = A.value("path", "");
         std::string Precision = A.value("precision", "");
         const auto ScanArgs = [&](const char *PathArg) {
           json Args = {{PathArg, Path}};
           if (!Precision.empty())
             Args["precision"] = Precision;
           return argumentsText(Args);
         };
         return "Review `" + Path + "` for mixed-precision (" +
                (Precision.empty() ? std::string("fp16/bf16") : Precision) +
                ") training with the mpnanny tools. Work in this order:\n\n"
                "1. Scan. If `" +
                Path + "` is a build folder, call `scan_project` with " + ScanArgs("build_dir") +
                "; otherwise call `scan_file` with " + ScanArgs("path") +
                ". If `parse_errors` is not empty the scan "
                "is incomplete: pass `build_dir` (compile_commands.json) or `flags` "
                "(-std=c++17 -isystem <libtorch include dirs>) and scan again before judging.\n"
                "2. Explain. Group the findings by `check`. For each check call `explain_check` "
                "once and tell the user, per finding: the line, the expression, the risk "
                "(overflow, underflow, domain, precision loss), the precision it runs in, and "
                "why it matters there (the page's numbers: 65504, 2^-24, ...). Order by "
                "severity: errors, then warnings, then notes.\n"
                "3. Fix. Call `suggest_fix` (same path/flags) to get the exact rewrites as a "
                "unified diff; show it and do not claim it was applied: the server writes "
                "nothing. For findings listed in `without_fixit`, propose the change from the "
                "finding's `fix` text and the page's \"Fixed code\" section.\n"
                "4. Verify. After the user applies fixes, scan again and confirm the findings "
                "are gone. For the findings that remain, plan a run-time check: export the "
                "sites with `mpnanny-check --export-sites sites.json <file>`, train a few "
                "hundred steps with MPNANNY_VERIFY=1 MPNANNY_SITES=sites.json, then call "
                "`site_verdicts` and `query_alerts` on nanny_logs/metrics.db to see which "
                "findings were CONFIRMED.\n\n"
                "Answer the user's question directly at the end: is this model ready to train "
                "in " +
                (Precision.empty() ? std::string("fp16/bf16") : Precision) +
                ", and what must change first?";
       }});
  Out.push_back(
      {"diagnose-training-run",
       "Diagnose a mixed-precision training run",
       "Read a run's alerts and verdicts, tie them to source lines and propose fixes",
       {{"db", "The run's metrics database (nanny_logs/metrics.db) or its folder", true},
        {"source", "The model's source file, to scan and fix (optional)", false}},
       [](const json &A) {
         std::string Db = A.value("db", "");
         std::string Source = A.value("source", "");
         return "Diagnose the mixed-precision training run recorded in `" + Db +
                "` with the mpnanny tools:\n\n"
                "1. Summarize. Call `run_summary` with " +
                argumentsText({{"db", Db}}) +
                ": precision, "
                "steps, alert counts, the first ERROR and the sites with the least headroom.\n"
                "2. Find the first failure. Call `query_alerts` with " +
                argumentsText(
                    {{"db", Db}, {"severity", vocab::name(vocab::AlertSeverity::Error)}}) +
                "; the earliest alert is usually the cause and the rest "
                "its consequences (an OVERFLOW in forward, then NAN in backward, then "
                "LOSS_SCALE_DROP). Note its op, tensor, file:line and value vs threshold.\n"
                "3. Explain. Call `explain_check` with the alert type (e.g. OVERFLOW) and with "
                "the check of any static finding at the same line.\n"
                "4. Verify against the static scan. Call `site_verdicts` with " +
                argumentsText({{"db", Db}}) +
                "; CONFIRMED findings are proven at run time. If it reports no verification "
                "data, say how to get it (mpnanny-check --export-sites, then MPNANNY_VERIFY=1).\n"
                "5. Fix. " +
                (Source.empty()
                     ? std::string("Scan the source file the alerts point to with `scan_file`")
                     : "Call `scan_file` with " + argumentsText({{"path", Source}})) +
                ", then `suggest_fix` for the lines the alerts name; show the diff, which the "
                "server never applies.\n\n"
                "End with: the root cause in one sentence, the fix, and how the next run will "
                "show it worked (which alert should disappear).";
       }});
  return Out;
}

std::string serverInstructions() {
  return "mpnanny finds fp16/bf16 hazards in LibTorch C++ code before training (scan_file, "
         "scan_project, suggest_fix, explain_check, list_checks) and reads what its runtime "
         "recorded during training (run_summary, query_alerts, site_verdicts). Paths are "
         "relative to the first root the server was started with. The server never writes "
         "files: fixes come back as diffs. The prompts review-model-for-mixed-precision and "
         "diagnose-training-run give the order of work.";
}

} // namespace mpnanny::mcp

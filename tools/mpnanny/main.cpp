// mpnanny: after training, read what the runtime recorded.
//   mpnanny summary | alerts | stats | sites | report | compare | mcp
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <iostream>
#include <map>

#include "cli.h"

namespace {

constexpr const char* kUsage = R"(usage: mpnanny <command> [options]

Queries (every one takes --db FILE|DIR ... [default $MPNANNY_DIR or nanny_logs],
--format table|json|csv, --color auto|always|never; FILE#RUN picks a run):
  summary [--top N]           run metadata, steps, alert counts, first ERROR, worst sites;
                              for the ranks of a data-parallel run, where a bad value came
                              from (origin) and which ranks stopped early
  alerts  [--severity ERROR|WARNING] [--type T] [--site S] [--steps A:B] [--rank N]
  stats   --step N [--site S | --param P] [--rank N]
  sites                       verification verdicts of static findings (MPNANNY_VERIFY=1)
AI agents:
  mcp [--root DIR]...         the MCP server over stdio (runs mpnanny-mcp; see mpnanny-mcp --help)
Reports (self-contained HTML, no network needed to view):
  report  [--db ...] -o report.html [--title T]
  compare REFERENCE.db LOW.db [-o compare.html] [--tolerance X] [--floor F] [--format ...]
          where the low-precision run departs from the fp32 reference

S (site): FILE:LINE, a function (substring), a parameter name or an op (softmax).
Exit codes: 0 ok, 1 nothing observed (stats), 2 usage error or unreadable database.
)";

/// `mpnanny mcp ...` is mpnanny-mcp, the executable next to this one (built with the
/// checks, which this CLI does not link): replaced by it, so the MCP client talks to it
/// directly over the same stdin/stdout.
int run_mcp(char** argv) {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string server = "mpnanny-mcp";
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self);
    dir.erase(dir.rfind('/') + 1);
    server = dir + server;
  }
  argv[1] = const_cast<char*>(server.c_str());
  ::execv(server.c_str(), argv + 1);
  std::cerr << "mpnanny mcp: cannot run " << server << ": " << std::strerror(errno)
            << " (it is built with the static checks, MPNANNY_BUILD_CHECKS=ON)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  if (argc < 2 || std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help" || std::string(argv[1]) == "help") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  if (command == "mcp") return run_mcp(argv);  // its own options, --help included
  std::vector<std::string> rest(argv + 2, argv + argc);
  for (const auto& word : rest) {
    if (word == "-h" || word == "--help") {
      std::cout << kUsage;
      return 0;
    }
  }
  // One function per subcommand (cli.h); `mcp` is handled above.
  const std::map<std::string, int (*)(mpnanny::cli::Args)> commands = {
      {"summary", mpnanny::cli::summary}, {"alerts", mpnanny::cli::alerts}, {"stats", mpnanny::cli::stats},
      {"sites", mpnanny::cli::sites},     {"report", mpnanny::cli::report}, {"compare", mpnanny::cli::compare},
  };
  const auto found = commands.find(command);
  if (found == commands.end()) {
    std::cerr << "mpnanny: unknown command '" << command << "'\n" << kUsage;
    return 2;
  }
  try {
    return found->second(mpnanny::cli::Args(std::move(rest)));
  } catch (const mpnanny::cli::UsageError& error) {
    std::cerr << "mpnanny " << command << ": " << error.what() << " (see mpnanny --help)\n";
    return 2;
  } catch (const mpnanny::query::Error& error) {
    std::cerr << "mpnanny: error: " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "mpnanny: error: " << error.what() << "\n";
    return 2;
  }
}

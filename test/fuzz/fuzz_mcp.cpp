// Fuzzes the MCP message handler (tools/mcp: Server::handle) with its real tools over a sandbox.
// An input is a session: lines of JSON-RPC after a fixed initialize, each handled in turn.
//
// The sandbox has one root (a small model, its mock torch header, a run database, and a symbolic
// link to a file outside) and, next to it, a folder the server must never read: its files hold a
// canary. Contract: every request gets one line of valid JSON-RPC (a notification none), nothing
// crashes, leaks or throws out of handle(), and no answer ever holds the canary, whatever the
// paths, sources, flags, build folders or URIs the input names.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "FuzzSupport.h"
#include "Protocol.h"
#include "Sandbox.h"
#include "Tools.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* const kCanary = "MPNANNY_FUZZ_CANARY_5e1f";

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

struct World {
  mpnanny::fuzz::ScratchDir scratch{"mcp"};
  std::string root, outside;
  std::unique_ptr<mpnanny::mcp::Sandbox> box;

  World() {
    root = scratch.path() + "/root";
    outside = scratch.path() + "/outside";
    const std::string secret = std::string("#error ") + kCanary + "\n// " + kCanary + "\n";
    for (const char* name : {"secret.h", "secret.cpp", "secret.md", "compile_commands.json", ".clang-tidy"})
      write_text(outside + "/" + name, secret);
    write_text(outside + "/build/compile_commands.json",
               "[{\"directory\": \"" + outside + "\", \"file\": \"" + outside +
                   "/secret.cpp\", \"command\": \"c++ -c secret.cpp\"}]");
    fs::create_directories(root + "/torch");
    fs::copy_file(MPNANNY_FUZZ_SOURCE_DIR "/test/fuzz/corpus/query/run.db", outside + "/metrics.db");
    fs::copy_file(MPNANNY_FUZZ_SOURCE_DIR "/test/checks/Inputs/mock/torch/torch.h", root + "/torch/torch.h");
    write_text(root + "/model.cpp",
               "#include \"torch/torch.h\"\n"
               "torch::Tensor head(torch::Tensor x) {\n"
               "  auto h = x.to(torch::kHalf);\n"
               "  return torch::log(torch::softmax(h, 1));\n"
               "}\n");
    write_text(root + "/build/compile_commands.json",
               "[{\"directory\": \"" + root + "\", \"file\": \"" + root +
                   "/model.cpp\", \"command\": \"c++ -std=c++17 -c model.cpp\"}]");
    fs::copy_file(MPNANNY_FUZZ_SOURCE_DIR "/test/fuzz/corpus/query/run.db", root + "/metrics.db");
    fs::create_directory_symlink(outside, root + "/escape");
    fs::create_symlink(outside + "/secret.h", root + "/secret.h");
    box = std::make_unique<mpnanny::mcp::Sandbox>(std::vector<std::string>{root},
                                                  std::vector<std::string>{"/usr", "/lib", "/lib64"}, 1u << 20);
  }
};

}  // namespace

// Debian's libclangTidy.a (LLVM 16) frees its ClangTidyASTConsumer with a size 8 bytes short of
// the allocation (ASan: new-delete-type-mismatch, 200 vs 192 bytes, in ~ClangTidyASTConsumer);
// glibc ignores the size. That one check is off here so the fuzzer can look at our code.
extern "C" const char* __asan_default_options() { return "new_delete_type_mismatch=0"; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World world;
  mpnanny::mcp::Settings settings;
  settings.MaxProjectFiles = 4;
  mpnanny::mcp::Server server(mpnanny::mcp::makeTools(*world.box, settings), mpnanny::mcp::makePrompts(),
                              mpnanny::mcp::knowledgeResources, {}, mpnanny::mcp::serverInstructions());
  const std::string input(reinterpret_cast<const char*>(data), size);
  const bool input_has_canary = input.find(kCanary) != std::string::npos;
  std::vector<std::string> lines = {
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
      R"("capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}})",
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"};
  size_t start = 0;
  for (size_t end; (end = input.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(input.substr(start, end - start));
  lines.push_back(input.substr(start));
  for (const std::string& line : lines) {
    if (line.size() > server.limits().MaxMessageBytes) continue;  // main() answers tooLong() instead
    const std::optional<std::string> reply = server.handle(line);
    if (!reply) continue;
    const json answer = json::parse(*reply, nullptr, /*allow_exceptions=*/false);
    if (answer.is_discarded() || !answer.is_object() || answer.value("jsonrpc", "") != "2.0")
      mpnanny::fuzz::broken("not a JSON-RPC answer: " + reply->substr(0, 200));
    if (!input_has_canary && reply->find(kCanary) != std::string::npos)
      mpnanny::fuzz::broken("a file outside the root was read: " + reply->substr(0, 400));
  }
  return 0;
}

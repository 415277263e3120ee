//===--- main.cpp - mpnanny-mcp --------------------------------------------===//
//
// mpnanny-mcp: the Model Context Protocol server, over stdio. An MCP client starts
// it and writes one JSON-RPC message per line; it answers one line per request.
//
//   mpnanny-mcp [--root DIR]... [--include-dir DIR]... [--rules DIR] [-j N]
//               [--max-read-bytes N]
//
// Exit codes: 0 at end of input, 2 usage or configuration error.
//
//===----------------------------------------------------------------------===//
#include "KnowledgeBase.h"
#include "Protocol.h"
#include "Sandbox.h"
#include "Scanner.h"
#include "Tools.h"
#include "TorchHeaders.h"

#include "llvm/Support/FileSystem.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>

namespace {

const char *const Usage =
    R"(usage: mpnanny-mcp [options]

The mpnanny MCP server over stdio (JSON-RPC 2.0, one message per line, protocol
2025-06-18). Register it with an MCP client; it is not meant to be run by hand.

  --root DIR          a folder whose files the tools may read (repeatable; default: the
                      current folder). Relative paths are taken from the first root.
  --include-dir DIR   a header folder the compiler may read besides the roots and the
                      system folders (repeatable)
  --rules DIR         the knowledge base (default: the bundled rules)
  -j N                files of a project scanned at once (default: 2)
  --max-read-bytes N  largest file a tool reads (default: 2097152)
  --version, --help
)";

int usageError(const std::string &Message) {
  std::cerr << "mpnanny-mcp: error: " << Message << "\n" << Usage;
  return 2;
}

/// Writes all of Text to Fd; false when the client has gone.
bool writeAll(int Fd, const std::string &Text) {
  size_t Done = 0;
  while (Done < Text.size()) {
    ssize_t N = ::write(Fd, Text.data() + Done, Text.size() - Done);
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0)
      return false;
    Done += static_cast<size_t>(N);
  }
  return true;
}

/// What the command line asks for.
struct Options {
  std::vector<std::string> Roots, IncludeDirs;
  std::string Rules;
  unsigned Jobs = std::min(2u, std::max(1u, std::thread::hardware_concurrency()));
  size_t MaxRead = 2u << 20;
};

/// Reads the command line into `O`; the exit code instead where the server must not start
/// (--help, --version, a bad argument).
std::optional<int> parseOptions(int argc, char **argv, Options &O) {
  for (int I = 1; I < argc; ++I) {
    std::string A = argv[I];
    auto Value = [&](const std::string &Name) -> std::optional<std::string> {
      if (A.rfind(Name + "=", 0) == 0)
        return A.substr(Name.size() + 1);
      if (A == Name && I + 1 < argc)
        return std::string(argv[++I]);
      return std::nullopt;
    };
    if (A == "--help" || A == "-h") {
      std::cout << Usage;
      return 0;
    }
    if (A == "--version") {
      std::cout << "mpnanny-mcp " << mpnanny::mcp::version() << "\n";
      return 0;
    }
    if (auto V = Value("--root")) {
      O.Roots.push_back(*V);
    } else if (auto V = Value("--include-dir")) {
      O.IncludeDirs.push_back(*V);
    } else if (auto V = Value("--rules")) {
      O.Rules = *V;
    } else if (auto V = Value("-j")) {
      try {
        O.Jobs = static_cast<unsigned>(std::max(1, std::stoi(*V)));
      } catch (const std::exception &) {
        return usageError("-j takes a number");
      }
    } else if (auto V = Value("--max-read-bytes")) {
      try {
        O.MaxRead = std::stoull(*V);
      } catch (const std::exception &) {
        return usageError("--max-read-bytes takes a number");
      }
    } else {
      return usageError("unknown argument '" + A + "'");
    }
  }
  return std::nullopt;
}

/// Answers each request line of stdin on `Protocol` until stdin ends or the client goes away.
int serve(mpnanny::mcp::Server &Server, int Protocol) {
  // Lines are read by hand so that an endless one is answered and skipped instead of
  // filling memory.
  const size_t Max = Server.limits().MaxMessageBytes;
  std::string Line;
  size_t Dropped = 0; // bytes of an over-long line seen so far
  char Buffer[65536];
  for (;;) {
    ssize_t N = ::read(STDIN_FILENO, Buffer, sizeof Buffer);
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0)
      break;
    for (ssize_t I = 0; I < N; ++I) {
      char C = Buffer[I];
      if (C != '\n') {
        if (Dropped) {
          ++Dropped;
        } else if (Line.size() < Max) {
          Line += C;
        } else {
          Dropped = Line.size() + 1;
          Line.clear();
        }
        continue;
      }
      std::optional<std::string> Reply;
      if (Dropped) {
        Reply = Server.tooLong(Dropped);
        Dropped = 0;
      } else {
        if (!Line.empty() && Line.back() == '\r')
          Line.pop_back();
        if (Line.find_first_not_of(" \t") != std::string::npos)
          Reply = Server.handle(Line);
        Line.clear();
      }
      if (Reply && !writeAll(Protocol, *Reply + "\n"))
        return 0;
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options O;
  if (std::optional<int> Exit = parseOptions(argc, argv, O))
    return *Exit;
  std::vector<std::string> &Roots = O.Roots;
  const std::string &Rules = O.Rules;
  if (Roots.empty()) {
    llvm::SmallString<256> Cwd;
    if (llvm::sys::fs::current_path(Cwd))
      return usageError("cannot determine the current folder; pass --root");
    Roots.push_back(std::string(Cwd));
  }

  // System header folders the compiler may read besides the roots: it needs the C++
  // library and LibTorch, and they hold nothing of the user's.
  std::vector<std::string> HeaderDirs = {"/usr", "/lib", "/lib64", MPNANNY_CLANG_RESOURCE_DIR};
  for (const auto &D : mpnanny::check::findTorchIncludeDirs())
    HeaderDirs.push_back(D);
  HeaderDirs.insert(HeaderDirs.end(), O.IncludeDirs.begin(), O.IncludeDirs.end());

  std::unique_ptr<mpnanny::mcp::Sandbox> Box;
  try {
    Box = std::make_unique<mpnanny::mcp::Sandbox>(Roots, HeaderDirs, O.MaxRead);
  } catch (const std::exception &E) {
    return usageError(E.what());
  }
  // A broken knowledge base is a configuration error now, not a failed tool call later.
  try {
    mpnanny::kb::KnowledgeBase::cached(
        Rules.empty() ? mpnanny::kb::KnowledgeBase::defaultDirectory() : Rules);
  } catch (const std::exception &E) {
    std::cerr << "mpnanny-mcp: error: " << E.what() << "\n";
    return 2;
  }

  // stdout carries the protocol only: anything else that prints there (clang, LLVM,
  // a library) would corrupt it, so file descriptor 1 becomes stderr and the protocol
  // gets a descriptor of its own.
  int Protocol = ::dup(STDOUT_FILENO);
  if (Protocol < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::cerr << "mpnanny-mcp: error: cannot set up stdout\n";
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);

  mpnanny::mcp::Settings S;
  S.RulesDir = Rules;
  S.Jobs = O.Jobs;
  mpnanny::mcp::Server Server(mpnanny::mcp::makeTools(*Box, S), mpnanny::mcp::makePrompts(),
                              mpnanny::mcp::knowledgeResources, {},
                              mpnanny::mcp::serverInstructions());

  return serve(Server, Protocol);
}

//===--- Protocol.h - mpnanny-mcp --------------------------------*- C++ -*-===//
//
// The Model Context Protocol server core: JSON-RPC 2.0 messages, one per line on
// stdin/stdout, the lifecycle (initialize, then anything), and the dispatch of
// tools, resources and prompts. Transport-free so that it can be driven from a
// test as well as from main().
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_MCP_PROTOCOL_H
#define MPNANNY_TOOLS_MCP_PROTOCOL_H

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpnanny::mcp {

namespace code {
constexpr int ParseError = -32700;
constexpr int InvalidRequest = -32600;
constexpr int MethodNotFound = -32601;
constexpr int InvalidParams = -32602;
constexpr int Internal = -32603;
/// MCP's code for resources/read of a URI the server does not have.
constexpr int ResourceNotFound = -32002;
} // namespace code

/// A failure the client gets as a JSON-RPC error; Reason goes into `data.reason` so
/// that a program can tell an unsafe path from a missing file without parsing text.
struct RpcError : std::runtime_error {
  RpcError(int Code, const std::string &Message, std::string Reason = "")
      : std::runtime_error(Message), Code(Code), Reason(std::move(Reason)) {}
  int Code;
  std::string Reason;
};

struct Tool {
  std::string Name, Title, Description;
  nlohmann::json InputSchema, OutputSchema;
  bool ReadOnly = true;
  /// Arguments in, structured result out; throws RpcError.
  std::function<nlohmann::json(const nlohmann::json &)> Run;
};

struct Prompt {
  std::string Name, Title, Description;
  struct Argument {
    std::string Name, Description;
    bool Required = false;
  };
  std::vector<Argument> Arguments;
  std::function<std::string(const nlohmann::json &)> Text;
};

struct Resource {
  std::string Uri, Name, Title, Description, MimeType;
  std::function<std::string()> Read;
};

struct ServerLimits {
  size_t MaxMessageBytes = 8u << 20;  ///< a request line; the inline source fits in it
  size_t MaxResponseBytes = 4u << 20; ///< a response line
};

class Server {
public:
  Server(std::vector<Tool> Tools, std::vector<Prompt> Prompts,
         std::function<std::vector<Resource>()> Resources, ServerLimits Limits,
         std::string Instructions);

  /// One message in; the response line, or nothing for a notification.
  std::optional<std::string> handle(const std::string &Line);
  /// The answer to a line longer than the limit (its id is unknown).
  std::string tooLong(size_t Bytes) const;
  const ServerLimits &limits() const { return Limits; }

  static constexpr const char *LatestProtocol = "2025-06-18";
  static const std::vector<std::string> &supportedProtocols();

private:
  std::optional<std::string> handleBatch(const nlohmann::json &Batch);
  nlohmann::json dispatch(const std::string &Method, const nlohmann::json &Params);
  nlohmann::json initialize(const nlohmann::json &Params);
  nlohmann::json callTool(const nlohmann::json &Params);
  nlohmann::json readResource(const nlohmann::json &Params);
  nlohmann::json getPrompt(const nlohmann::json &Params);

  std::vector<Tool> Tools;
  std::vector<Prompt> Prompts;
  std::function<std::vector<Resource>()> Resources;
  ServerLimits Limits;
  std::string Instructions;
  bool Initialized = false;
  std::string Protocol;
};

/// The server's version, for serverInfo.
const char *version();

} // namespace mpnanny::mcp

#endif

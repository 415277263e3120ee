//===--- Protocol.cpp - mpnanny-mcp ----------------------------------------===//
#include "Protocol.h"

#include <algorithm>

using nlohmann::json;

namespace mpnanny::mcp {

const char *version() { return MPNANNY_VERSION; }

const std::vector<std::string> &Server::supportedProtocols() {
  // Newest first. The server sends nothing the older versions lack a place for:
  // structuredContent and outputSchema are extra fields to a 2025-03-26 client.
  static const std::vector<std::string> Versions = {"2025-06-18", "2025-03-26", "2024-11-05"};
  return Versions;
}

Server::Server(std::vector<Tool> Tools, std::vector<Prompt> Prompts,
               std::function<std::vector<Resource>()> Resources, ServerLimits Limits,
               std::string Instructions)
    : Tools(std::move(Tools)), Prompts(std::move(Prompts)), Resources(std::move(Resources)),
      Limits(Limits), Instructions(std::move(Instructions)) {}

static json errorResponse(const json &Id, int Code, const std::string &Message,
                          const std::string &Reason = "") {
  json Error = {{"code", Code}, {"message", Message}};
  if (!Reason.empty())
    Error["data"] = {{"reason", Reason}};
  return {{"jsonrpc", "2.0"}, {"id", Id}, {"error", Error}};
}

/// One line of JSON-RPC. Text the server echoes need not be valid UTF-8 (a parse error quotes
/// the client's bad bytes): they are replaced, so one bad byte cannot end the server (found by
/// fuzz_mcp: the default dump() threw out of handle()).
static std::string toLine(const json &Message) {
  return Message.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string Server::tooLong(size_t Bytes) const {
  return toLine(errorResponse(nullptr, code::InvalidRequest,
                              "message of " + std::to_string(Bytes) + " bytes is over the " +
                                  std::to_string(Limits.MaxMessageBytes) + "-byte limit",
                              "too_large"));
}

std::optional<std::string> Server::handle(const std::string &Line) {
  json Message;
  try {
    // The parser itself is iterative; the depth limit keeps a hostile `[[[[...` from
    // recursing in what reads the value afterwards.
    Message = json::parse(Line, [](int Depth, json::parse_event_t, json &) {
      if (Depth > 64)
        throw RpcError(code::ParseError, "JSON nested deeper than 64 levels", "too_deep");
      return true;
    });
  } catch (const RpcError &E) {
    return toLine(errorResponse(nullptr, E.Code, E.what(), E.Reason));
  } catch (const json::exception &E) {
    return toLine(
        errorResponse(nullptr, code::ParseError, std::string("parse error: ") + E.what()));
  }
  if (Message.is_array())
    return handleBatch(Message);
  if (!Message.is_object())
    return toLine(errorResponse(nullptr, code::InvalidRequest, "a message is a JSON object"));

  const bool HasId = Message.contains("id");
  json Id = HasId ? Message["id"] : json(nullptr);
  if (HasId && !Id.is_string() && !Id.is_number_integer())
    return toLine(
        errorResponse(nullptr, code::InvalidRequest, "id must be a string or an integer"));
  if (Message.value("jsonrpc", json()) != "2.0")
    return HasId ? std::optional<std::string>(
                       toLine(errorResponse(Id, code::InvalidRequest, "jsonrpc must be \"2.0\"")))
                 : std::nullopt;
  if (!Message.contains("method")) {
    // A response to a request of ours: the server sends none, so there is nothing to do.
    if (Message.contains("result") || Message.contains("error"))
      return std::nullopt;
    return HasId ? std::optional<std::string>(
                       toLine(errorResponse(Id, code::InvalidRequest, "a request needs a method")))
                 : std::nullopt;
  }
  if (!Message["method"].is_string())
    return HasId ? std::optional<std::string>(
                       toLine(errorResponse(Id, code::InvalidRequest, "method must be a string")))
                 : std::nullopt;
  const std::string Method = Message["method"];
  json Params = Message.value("params", json::object());
  if (!HasId) {
    // Notifications (initialized, cancelled, roots changed) need no answer; the work
    // is synchronous, so there is nothing to cancel.
    return std::nullopt;
  }
  if (!Params.is_object())
    return toLine(errorResponse(Id, code::InvalidParams, "params must be an object"));

  json Response;
  try {
    Response = {{"jsonrpc", "2.0"}, {"id", Id}, {"result", dispatch(Method, Params)}};
  } catch (const RpcError &E) {
    Response = errorResponse(Id, E.Code, E.what(), E.Reason);
  } catch (const std::exception &E) {
    Response = errorResponse(Id, code::Internal, std::string("internal error: ") + E.what());
  }
  std::string Out = toLine(Response);
  if (Out.size() > Limits.MaxResponseBytes)
    return toLine(errorResponse(Id, code::Internal,
                                "the result is " + std::to_string(Out.size()) +
                                    " bytes, over the " + std::to_string(Limits.MaxResponseBytes) +
                                    "-byte limit: narrow the request (limit, files, filters)",
                                "too_large"));
  return Out;
}

std::optional<std::string> Server::handleBatch(const json &Batch) {
  // JSON-RPC batches were part of MCP 2025-03-26 only: 2025-06-18 removed them, and a client
  // that negotiated it sends none.
  if (Protocol != "2025-03-26")
    return toLine(
        errorResponse(nullptr, code::InvalidRequest,
                      "batches are part of MCP 2025-03-26 only" +
                          (Protocol.empty() ? std::string(" (and never before initialize)")
                                            : " (this session speaks " + Protocol + ")") +
                          ": send one message per line"));
  if (Batch.empty())
    return toLine(errorResponse(nullptr, code::InvalidRequest, "an empty batch"));
  json Replies = json::array();
  for (const json &Element : Batch) {
    if (Element.is_array()) {
      Replies.push_back(errorResponse(nullptr, code::InvalidRequest, "a batch inside a batch"));
    } else if (Element.is_object() && Element.value("method", json()) == "initialize") {
      Replies.push_back(errorResponse(Element.value("id", json()), code::InvalidRequest,
                                      "initialize cannot be part of a batch"));
    } else if (auto Reply = handle(toLine(Element))) {
      Replies.push_back(json::parse(*Reply));
    }
  }
  if (Replies.empty())
    return std::nullopt; // notifications only
  return toLine(Replies);
}

json Server::dispatch(const std::string &Method, const json &Params) {
  if (Method == "ping")
    return json::object();
  if (Method == "initialize")
    return initialize(Params);
  if (!Initialized)
    throw RpcError(code::InvalidRequest,
                   "server not initialized: send 'initialize' before '" + Method + "'",
                   "not_initialized");
  if (Method == "tools/list") {
    json List = json::array();
    for (const auto &T : Tools)
      List.push_back({{"name", T.Name},
                      {"title", T.Title},
                      {"description", T.Description},
                      {"inputSchema", T.InputSchema},
                      {"outputSchema", T.OutputSchema},
                      {"annotations",
                       {{"title", T.Title},
                        {"readOnlyHint", T.ReadOnly},
                        {"destructiveHint", false},
                        {"idempotentHint", true},
                        {"openWorldHint", false}}}});
    return {{"tools", List}};
  }
  if (Method == "tools/call")
    return callTool(Params);
  if (Method == "resources/list") {
    json List = json::array();
    for (const auto &R : Resources())
      List.push_back({{"uri", R.Uri},
                      {"name", R.Name},
                      {"title", R.Title},
                      {"description", R.Description},
                      {"mimeType", R.MimeType}});
    return {{"resources", List}};
  }
  if (Method == "resources/templates/list") {
    return {{"resourceTemplates",
             json::array(
                 {{{"uriTemplate", "mpnanny://knowledge/{name}"},
                   {"name", "knowledge-page"},
                   {"title", "mpnanny knowledge page"},
                   {"description", "The page of a check (mpnanny-<check>) or a runtime alert "
                                   "(alert-<TYPE>): cause, bad code, fixed code, run-time symptom"},
                   {"mimeType", "text/markdown"}}})}};
  }
  if (Method == "resources/read")
    return readResource(Params);
  if (Method == "prompts/list") {
    json List = json::array();
    for (const auto &P : Prompts) {
      json Args = json::array();
      for (const auto &A : P.Arguments)
        Args.push_back(
            {{"name", A.Name}, {"description", A.Description}, {"required", A.Required}});
      List.push_back({{"name", P.Name},
                      {"title", P.Title},
                      {"description", P.Description},
                      {"arguments", Args}});
    }
    return {{"prompts", List}};
  }
  if (Method == "prompts/get")
    return getPrompt(Params);
  throw RpcError(code::MethodNotFound, "method not found: '" + Method + "'", "unknown_method");
}

json Server::initialize(const json &Params) {
  if (Initialized)
    throw RpcError(code::InvalidRequest, "already initialized", "already_initialized");
  const json Requested = Params.value("protocolVersion", json());
  if (!Requested.is_string())
    throw RpcError(code::InvalidParams, "initialize: protocolVersion (a string) is required");
  const auto &Supported = supportedProtocols();
  // Version negotiation: the client's version when we speak it, else our latest and
  // the client decides whether it can go on.
  Protocol =
      std::find(Supported.begin(), Supported.end(), Requested.get<std::string>()) != Supported.end()
          ? Requested.get<std::string>()
          : std::string(LatestProtocol);
  Initialized = true;
  return {
      {"protocolVersion", Protocol},
      {"capabilities",
       {{"tools", {{"listChanged", false}}},
        {"resources", {{"subscribe", false}, {"listChanged", false}}},
        {"prompts", {{"listChanged", false}}}}},
      {"serverInfo",
       {{"name", "mpnanny"}, {"title", "mpnanny mixed-precision nanny"}, {"version", version()}}},
      {"instructions", Instructions}};
}

/// Whether a tool's error is about the world rather than the request: the arguments had the
/// right shape, and running the tool on them failed.
static bool isToolFailure(const RpcError &E) {
  static const char *const RequestReasons[] = {"invalid_argument", "missing_argument",
                                               "unknown_argument", "invalid_path",
                                               "flag_not_allowed", ""};
  return E.Code == code::InvalidParams &&
         std::find(std::begin(RequestReasons), std::end(RequestReasons), E.Reason) ==
             std::end(RequestReasons);
}

json Server::callTool(const json &Params) {
  const json Name = Params.value("name", json());
  if (!Name.is_string())
    throw RpcError(code::InvalidParams, "tools/call: name (a string) is required");
  auto It = std::find_if(Tools.begin(), Tools.end(),
                         [&](const Tool &T) { return T.Name == Name.get<std::string>(); });
  if (It == Tools.end())
    throw RpcError(code::InvalidParams, "unknown tool '" + Name.get<std::string>() + "'",
                   "unknown_tool");
  json Arguments = Params.value("arguments", json::object());
  if (!Arguments.is_object())
    throw RpcError(code::InvalidParams, It->Name + ": arguments must be an object");
  json Result;
  try {
    Result = It->Run(Arguments);
  } catch (const RpcError &E) {
    if (!isToolFailure(E))
      throw;
    // The tool ran and failed on what it found (a file missing or unreadable, a path that leads
    // out of the roots, nothing that matches): a result with isError, which clients hand to the
    // model so that it can try again, where a JSON-RPC error is the client's to handle (MCP
    // 2025-06-18, tools, "Error Handling").
    return {{"content", json::array({{{"type", "text"}, {"text", E.what()}}})},
            {"isError", true},
            {"_meta", {{"mpnanny/reason", E.Reason}}}};
  }
  // The structured result, and the same JSON as text for clients that only show text.
  return {{"content",
           json::array({{{"type", "text"},
                         {"text", Result.dump(2, ' ', false, json::error_handler_t::replace)}}})},
          {"structuredContent", Result},
          {"isError", false}};
}

json Server::readResource(const json &Params) {
  const json Uri = Params.value("uri", json());
  if (!Uri.is_string())
    throw RpcError(code::InvalidParams, "resources/read: uri (a string) is required");
  for (const auto &R : Resources())
    if (R.Uri == Uri.get<std::string>())
      return {{"contents",
               json::array({{{"uri", R.Uri}, {"mimeType", R.MimeType}, {"text", R.Read()}}})}};
  throw RpcError(code::ResourceNotFound, "resource not found: '" + Uri.get<std::string>() + "'",
                 "not_found");
}

json Server::getPrompt(const json &Params) {
  const json Name = Params.value("name", json());
  if (!Name.is_string())
    throw RpcError(code::InvalidParams, "prompts/get: name (a string) is required");
  auto It = std::find_if(Prompts.begin(), Prompts.end(),
                         [&](const Prompt &P) { return P.Name == Name.get<std::string>(); });
  if (It == Prompts.end())
    throw RpcError(code::InvalidParams, "unknown prompt '" + Name.get<std::string>() + "'",
                   "unknown_prompt");
  json Arguments = Params.value("arguments", json::object());
  if (!Arguments.is_object())
    throw RpcError(code::InvalidParams, It->Name + ": arguments must be an object");
  for (const auto &A : It->Arguments) {
    if (Arguments.contains(A.Name) && !Arguments[A.Name].is_string())
      throw RpcError(code::InvalidParams,
                     It->Name + ": argument '" + A.Name + "' must be a string");
    if (A.Required && (!Arguments.contains(A.Name) || Arguments[A.Name].get<std::string>().empty()))
      throw RpcError(code::InvalidParams,
                     It->Name + ": argument '" + A.Name + "' is required (" + A.Description + ")");
  }
  return {{"description", It->Description},
          {"messages",
           json::array({{{"role", "user"},
                         {"content", {{"type", "text"}, {"text", It->Text(Arguments)}}}}})}};
}

} // namespace mpnanny::mcp

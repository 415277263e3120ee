//===--- ToolKit.h - mpnanny-mcp ---------------------------------*- C++ -*-===//
//
// What every tool group (ScanTools, KnowledgeTools, RunTools) uses: reading a call's
// arguments, refusing bad ones with a reason an agent can act on, and the pieces of
// the JSON schemas the tools declare.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_MCP_TOOLKIT_H
#define MPNANNY_TOOLS_MCP_TOOLKIT_H

#include "Protocol.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mpnanny::mcp {

// Arguments

/// Refuses the call: -32602 with a machine-readable reason.
[[noreturn]] void invalid(const std::string &Message,
                          const std::string &Reason = "invalid_argument");
std::optional<std::string> optString(const nlohmann::json &Args, const std::string &Tool,
                                     const std::string &Name);
/// A string argument that must be there and not be empty.
std::string reqString(const nlohmann::json &Args, const std::string &Tool, const std::string &Name);
/// An integer argument; its range is the schema's, checked by checkArguments before the tool runs.
std::optional<int64_t> optInt(const nlohmann::json &Args, const std::string &Tool,
                              const std::string &Name);
/// The argument upper-cased: names are matched as the CLI matches them, in any case.
std::optional<std::string> upperOpt(std::optional<std::string> Text);
std::vector<std::string> optStrings(const nlohmann::json &Args, const std::string &Tool,
                                    const std::string &Name);
/// What the input schema says of every tool's arguments: no argument it does not list, and
/// integers within its minimum and maximum.
void checkArguments(const nlohmann::json &Args, const std::string &Tool,
                    const nlohmann::json &Schema);
/// `precision`: one of the vocabulary's precisions, or "" to infer it per function.
std::string precisionArg(const nlohmann::json &Args, const std::string &Tool);
/// `checks`: a clang-tidy glob.
std::optional<std::string> checksArg(const nlohmann::json &Args, const std::string &Tool);

// Schemas

nlohmann::json str(const std::string &Description);
nlohmann::json integer(const std::string &Description);
/// An integer argument and the range optInt enforces for it, so that a client validating against
/// the schema learns the range before a call is refused.
nlohmann::json integer(const std::string &Description, int64_t Min, int64_t Max);
nlohmann::json strings(const std::string &Description);
nlohmann::json precisionSchema();
nlohmann::json objectSchema(nlohmann::json Properties, std::vector<std::string> Required = {});
/// An array of strings, and an array of objects (rows whose fields the tool's description names).
nlohmann::json stringArraySchema();
nlohmann::json rowsSchema();

} // namespace mpnanny::mcp

#endif

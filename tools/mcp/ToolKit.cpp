//===--- ToolKit.cpp - mpnanny-mcp -----------------------------------------===//
#include "ToolKit.h"

#include "Vocabulary.h"

#include <cctype>
#include <cstring>

using nlohmann::json;

namespace mpnanny::mcp {

// ---------------------------------------------------------------------------
// Arguments

[[noreturn]] void invalid(const std::string &Message, const std::string &Reason) {
  throw RpcError(code::InvalidParams, Message, Reason);
}

std::optional<std::string> optString(const json &Args, const std::string &Tool,
                                     const std::string &Name) {
  if (!Args.contains(Name) || Args[Name].is_null())
    return std::nullopt;
  if (!Args[Name].is_string())
    invalid(Tool + ": '" + Name + "' must be a string");
  return Args[Name].get<std::string>();
}

std::string reqString(const json &Args, const std::string &Tool, const std::string &Name) {
  auto V = optString(Args, Tool, Name);
  if (!V || V->empty())
    invalid(Tool + ": '" + Name + "' is required", "missing_argument");
  return *V;
}

/// An integer argument; its range is the schema's, checked by checkArguments before the tool runs.
std::optional<int64_t> optInt(const json &Args, const std::string &Tool, const std::string &Name) {
  if (!Args.contains(Name) || Args[Name].is_null())
    return std::nullopt;
  if (!Args[Name].is_number_integer())
    invalid(Tool + ": '" + Name + "' must be an integer");
  return Args[Name].get<int64_t>();
}

std::optional<std::string> upperOpt(std::optional<std::string> Text) {
  if (Text)
    *Text = vocab::upperCase(*Text);
  return Text;
}

std::vector<std::string> optStrings(const json &Args, const std::string &Tool,
                                    const std::string &Name) {
  std::vector<std::string> Out;
  if (!Args.contains(Name) || Args[Name].is_null())
    return Out;
  if (!Args[Name].is_array())
    invalid(Tool + ": '" + Name + "' must be an array of strings");
  for (const auto &V : Args[Name]) {
    if (!V.is_string())
      invalid(Tool + ": '" + Name + "' must be an array of strings");
    Out.push_back(V.get<std::string>());
  }
  return Out;
}

/// What the input schema says of every tool's arguments: no argument it does not list, and
/// integers within its minimum and maximum.
void checkArguments(const json &Args, const std::string &Tool, const json &Schema) {
  for (const auto &[Key, Value] : Args.items()) {
    if (!Schema["properties"].contains(Key))
      invalid(Tool + ": unknown argument '" + Key + "'", "unknown_argument");
    const json &Property = Schema["properties"][Key];
    if (!Property.contains("minimum") || Value.is_null())
      continue;
    const int64_t Min = Property["minimum"], Max = Property["maximum"];
    // Unsigned beyond int64 reads as out of range, not as a wrapped negative number.
    if (!Value.is_number_integer() ||
        (Value.is_number_unsigned() && Value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) ||
        Value.get<int64_t>() < Min || Value.get<int64_t>() > Max)
      invalid(Tool + ": '" + Key + "' must be an integer between " + std::to_string(Min) + " and " +
              std::to_string(Max));
  }
}

std::string precisionArg(const json &Args, const std::string &Tool) {
  auto P = optString(Args, Tool, "precision");
  if (!P || P->empty())
    return "";
  if (!vocab::parse<vocab::Precision>(*P))
    invalid(Tool + ": unknown precision '" + *P + "' (use " +
            vocab::choices(vocab::names<vocab::Precision>()) + ")");
  return *P;
}

std::optional<std::string> checksArg(const json &Args, const std::string &Tool) {
  auto C = optString(Args, Tool, "checks");
  if (!C)
    return std::nullopt;
  for (char Ch : *C)
    if (!std::isalnum(static_cast<unsigned char>(Ch)) && !std::strchr("*,-_.", Ch))
      invalid(Tool + ": 'checks' is a clang-tidy glob such as '-*,mpnanny-log-softmax'");
  return C;
}

// ---------------------------------------------------------------------------
// Schemas

json str(const std::string &Description) {
  return {{"type", "string"}, {"description", Description}};
}
json integer(const std::string &Description) {
  return {{"type", "integer"}, {"description", Description}};
}
/// An integer argument and the range optInt enforces for it, so that a client validating against
/// the schema learns the range before a call is refused.
json integer(const std::string &Description, int64_t Min, int64_t Max) {
  return {{"type", "integer"}, {"description", Description}, {"minimum", Min}, {"maximum", Max}};
}
json strings(const std::string &Description) {
  return {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", Description}};
}
json precisionSchema() {
  return {{"type", "string"},
          {"enum", vocab::names<vocab::Precision>()},
          {"description", "Force the precision instead of inferring it per function"}};
}
json objectSchema(json Properties, std::vector<std::string> Required) {
  json S = {{"type", "object"}, {"properties", std::move(Properties)}};
  if (!Required.empty())
    S["required"] = Required;
  return S;
}

json stringArraySchema() { return {{"type", "array"}, {"items", {{"type", "string"}}}}; }

json rowsSchema() { return {{"type", "array"}, {"items", {{"type", "object"}}}}; }

} // namespace mpnanny::mcp

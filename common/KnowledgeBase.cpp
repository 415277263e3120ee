//===--- KnowledgeBase.cpp - mpnanny ---------------------------------------===//
#include "KnowledgeBase.h"

#include <yaml-cpp/yaml.h>

#include "LoadedObject.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>

#ifndef MPNANNY_SOURCE_RULES_DIR
#define MPNANNY_SOURCE_RULES_DIR ""
#endif
#ifndef MPNANNY_INSTALLED_RULES_DIR
#define MPNANNY_INSTALLED_RULES_DIR ""
#endif
// The install's data folder relative to its bin/ and to its lib/ folder (checks/CMakeLists.txt).
#ifndef MPNANNY_DATA_FROM_BINDIR
#define MPNANNY_DATA_FROM_BINDIR ""
#endif
#ifndef MPNANNY_DATA_FROM_LIBDIR
#define MPNANNY_DATA_FROM_LIBDIR ""
#endif

namespace fs = std::filesystem;

namespace mpnanny::kb {

const char *toString(AutocastPolicy P) {
  switch (P) {
  case AutocastPolicy::Lower: return "lower";
  case AutocastPolicy::FP32: return toString(Format::FP32); // "run it in fp32"
  case AutocastPolicy::FP32UnlessDtype: return "fp32-unless-dtype";
  case AutocastPolicy::Promote: return "promote";
  case AutocastPolicy::Banned: return "banned";
  case AutocastPolicy::None: return "none";
  }
  return "?";
}
bool Risk::appliesIn(std::optional<Format> Computed) const {
  if (Level == Severity::Note)
    return false;
  if (Kind == RiskKind::Banned)
    return !Computed;
  return Computed && std::find(Formats.begin(), Formats.end(), *Computed) != Formats.end();
}

bool isAutocast(Precision P) {
  return P == Precision::AutocastFP16 || P == Precision::AutocastBF16;
}

bool isHalfFormat(Format F) { return F != Format::FP32; }

LoadError::LoadError(Mark Where, const std::string &Message)
    : std::runtime_error(Where.File + ":" + std::to_string(Where.Line) + ":" +
                         std::to_string(Where.Column) + ": error: " + Message),
      Where(std::move(Where)) {}

namespace {

/// Reads one rule file, with every complaint pointing at the offending node.
class FileReader {
public:
  explicit FileReader(std::string File) : File(std::move(File)) {}

  Mark markOf(const YAML::Node &N) const {
    YAML::Mark M = N.Mark();
    // yaml-cpp counts from 0; compilers and editors count from 1.
    return {File, M.line + 1, M.column + 1};
  }
  [[noreturn]] void fail(const YAML::Node &N, const std::string &Message) const {
    throw LoadError(markOf(N), Message);
  }

  void expectMap(const YAML::Node &N, const std::string &What) const {
    if (!N.IsMap())
      fail(N, What + " must be a mapping");
  }
  /// Unknown keys are errors: a misspelt key would otherwise be silently ignored.
  void allowKeys(const YAML::Node &N, const std::set<std::string> &Allowed,
                 const std::string &What) const {
    for (const auto &KV : N) {
      std::string Key = KV.first.as<std::string>();
      if (!Allowed.count(Key)) {
        std::string List;
        for (const auto &A : Allowed)
          List += (List.empty() ? "" : ", ") + A;
        fail(KV.first, "unknown key '" + Key + "' in " + What + " (allowed: " + List + ")");
      }
    }
  }
  std::string scalar(const YAML::Node &N, const std::string &What) const {
    if (!N.IsScalar())
      fail(N, What + " must be a string");
    return N.as<std::string>();
  }
  std::string requiredString(const YAML::Node &Map, const char *Key,
                             const std::string &What) const {
    YAML::Node N = Map[Key];
    if (!N)
      fail(Map, What + " has no '" + Key + "'");
    std::string S = scalar(N, std::string("'") + Key + "'");
    if (S.empty())
      fail(N, std::string("'") + Key + "' must not be empty");
    return S;
  }
  std::string optionalString(const YAML::Node &Map, const char *Key) const {
    YAML::Node N = Map[Key];
    return N ? scalar(N, std::string("'") + Key + "'") : std::string();
  }
  std::vector<std::string> stringList(const YAML::Node &Map, const char *Key) const {
    std::vector<std::string> Out;
    YAML::Node N = Map[Key];
    if (!N)
      return Out;
    if (N.IsScalar())
      return {N.as<std::string>()};
    if (!N.IsSequence())
      fail(N, std::string("'") + Key + "' must be a list of strings");
    for (const auto &E : N)
      Out.push_back(scalar(E, std::string("an entry of '") + Key + "'"));
    return Out;
  }
  double number(const YAML::Node &N, const std::string &What) const {
    std::string S = scalar(N, What);
    if (S == "inf" || S == ".inf" || S == "+inf")
      return INFINITY;
    if (S == "-inf" || S == "-.inf")
      return -INFINITY;
    char *End = nullptr;
    double V = std::strtod(S.c_str(), &End);
    if (End == S.c_str() || *End != '\0')
      fail(N, What + " must be a number (or inf, -inf), not '" + S + "'");
    return V;
  }
  bool boolean(const YAML::Node &N, const std::string &What) const {
    std::string S = scalar(N, What);
    if (S == "true" || S == "yes")
      return true;
    if (S == "false" || S == "no")
      return false;
    fail(N, What + " must be true or false, not '" + S + "'");
  }

  template <typename Enum>
  Enum choice(const YAML::Node &N, const std::string &What,
              std::initializer_list<Enum> Values) const {
    return choice(N, What, std::vector<Enum>(Values));
  }
  template <typename Enum>
  Enum choice(const YAML::Node &N, const std::string &What, const std::vector<Enum> &Values) const {
    std::string S = scalar(N, What);
    std::string List;
    for (Enum V : Values) {
      if (S == toString(V))
        return V;
      List += (List.empty() ? "" : ", ") + std::string(toString(V));
    }
    fail(N, What + " must be one of " + List + ", not '" + S + "'");
  }

  Risk risk(const YAML::Node &N) const {
    expectMap(N, "a risk");
    allowKeys(N, {"in", "kind", "severity", "message", "fix", "uses"}, "a risk");
    Risk R;
    YAML::Node In = N["in"];
    if (!In)
      fail(N, "a risk has no 'in' (the formats it applies to: fp16, bf16)");
    std::vector<YAML::Node> Items;
    if (In.IsSequence())
      for (const auto &E : In)
        Items.push_back(E);
    else
      Items.push_back(In);
    for (const auto &E : Items)
      R.Formats.push_back(choice(E, "a risk's format", {Format::FP16, Format::BF16, Format::FP32}));
    if (!N["kind"])
      fail(N, "a risk has no 'kind'");
    R.Kind = choice(N["kind"], "'kind'", vocab::all<RiskKind>());
    R.Level = N["severity"] ? choice(N["severity"], "'severity'",
                                     {Severity::Note, Severity::Warning, Severity::Error})
                            : Severity::Warning;
    R.Message = requiredString(N, "message", "a risk");
    R.Fix = requiredString(N, "fix", "a risk");
    R.Uses = stringList(N, "uses");
    static const std::vector<std::string> KnownUses = {"prefix-sum", "log", "divisor", "threshold"};
    for (const auto &U : R.Uses)
      if (std::find(KnownUses.begin(), KnownUses.end(), U) == KnownUses.end())
        fail(N["uses"], "'uses' names prefix-sum, log, divisor or threshold, not '" + U + "'");
    return R;
  }

  RangeSpec range(const YAML::Node &N) const {
    expectMap(N, "'range'");
    allowKeys(N, {"min", "max", "min_open", "max_open"}, "'range'");
    RangeSpec R;
    if (!N["min"] || !N["max"])
      fail(N, "'range' needs both 'min' and 'max'");
    R.Min = number(N["min"], "'min'");
    R.Max = number(N["max"], "'max'");
    if (R.Min > R.Max)
      fail(N, "'range' has min above max");
    if (N["min_open"])
      R.MinOpen = boolean(N["min_open"], "'min_open'");
    if (N["max_open"])
      R.MaxOpen = boolean(N["max_open"], "'max_open'");
    return R;
  }

  Op op(const YAML::Node &N) const {
    expectMap(N, "an op");
    allowKeys(N,
              {"id", "summary", "spellings", "has_self", "aten", "autocast", "autocast_cpu",
               "autocast_1_13", "risks", "value_args", "range", "transfer", "check", "references"},
              "an op");
    Op O;
    O.Where = markOf(N);
    O.Id = requiredString(N, "id", "an op");
    O.Summary = optionalString(N, "summary");
    YAML::Node S = N["spellings"];
    if (!S)
      fail(N, "op '" + O.Id + "' has no 'spellings'");
    expectMap(S, "'spellings'");
    allowKeys(S, {"functions", "methods", "functional", "modules"}, "'spellings'");
    O.Functions = stringList(S, "functions");
    O.Methods = stringList(S, "methods");
    O.Functional = stringList(S, "functional");
    O.Modules = stringList(S, "modules");
    if (O.Functions.empty() && O.Methods.empty() && O.Functional.empty() && O.Modules.empty())
      fail(S, "op '" + O.Id + "' lists no spelling");
    if (N["has_self"])
      O.HasSelf = boolean(N["has_self"], "'has_self'");
    O.Aten = stringList(N, "aten");
    for (size_t I = 0; I < O.Aten.size(); ++I)
      if (O.Aten[I].rfind("aten::", 0) != 0)
        fail(N["aten"].IsSequence() ? N["aten"][I] : N["aten"],
             "ATen op names start with 'aten::', not '" + O.Aten[I] + "'");
    // CUDA autocast's policy (LibTorch 2.x), CPU autocast's, and CUDA's in 1.13 where it differs.
    auto Policy = [&](const char *Key) {
      return choice(N[Key], std::string("'") + Key + "'",
                    {AutocastPolicy::Lower, AutocastPolicy::FP32, AutocastPolicy::FP32UnlessDtype,
                     AutocastPolicy::Promote, AutocastPolicy::Banned, AutocastPolicy::None});
    };
    if (N["autocast"])
      O.Autocast = Policy("autocast");
    if (N["autocast_cpu"])
      O.AutocastCpu = Policy("autocast_cpu");
    if (N["autocast_1_13"])
      O.AutocastLegacy = Policy("autocast_1_13");
    if (YAML::Node Risks = N["risks"]) {
      if (!Risks.IsSequence())
        fail(Risks, "'risks' must be a list");
      for (const auto &R : Risks)
        O.Risks.push_back(risk(R));
    }
    if (YAML::Node Values = N["value_args"]) {
      if (!Values.IsSequence())
        fail(Values, "'value_args' must be a list");
      for (const auto &V : Values) {
        expectMap(V, "a value argument");
        allowKeys(V, {"index", "role"}, "a value argument");
        ValueArg A;
        if (!V["index"])
          fail(V, "a value argument has no 'index'");
        double Index = number(V["index"], "'index'");
        if (Index < 0 || Index != std::floor(Index) || Index > 16)
          fail(V["index"], "'index' must be a small non-negative integer");
        A.Index = static_cast<unsigned>(Index);
        A.Role = V["role"] ? choiceRole(V["role"]) : "fill";
        O.ValueArgs.push_back(A);
      }
    }
    if (N["range"])
      O.Range = range(N["range"]);
    if (N["transfer"]) {
      O.Transfer = scalar(N["transfer"], "'transfer'");
      static const std::set<std::string> Known = {"identity", "union",      "exp",    "log", "sqrt",
                                                  "rsqrt",    "reciprocal", "square", "abs", "neg",
                                                  "clamp",    "pow",        "sum",    "mean"};
      if (!Known.count(O.Transfer))
        fail(N["transfer"], "unknown transfer '" + O.Transfer +
                                "' (known: identity, union, exp, log, sqrt, rsqrt, reciprocal, "
                                "square, abs, neg, clamp, pow, sum, mean)");
    }
    O.Check = N["check"] ? scalar(N["check"], "'check'") : vocab::name(vocab::Check::RiskyOp);
    O.References = stringList(N, "references");
    if (!O.Risks.empty() && O.References.empty())
      fail(N, "op '" + O.Id + "' has risks but no 'references' (every rule carries its evidence)");
    return O;
  }

  std::string choiceRole(const YAML::Node &N) const {
    std::string R = scalar(N, "'role'");
    if (R != "fill" && R != "bound" && R != "eps" && R != "scale")
      fail(N, "'role' must be one of fill, bound, eps, scale, not '" + R + "'");
    return R;
  }

  OptionValue option(const YAML::Node &N) const {
    expectMap(N, "an option");
    allowKeys(N, {"id", "class", "setter", "default", "role", "references"}, "an option");
    OptionValue O;
    O.Where = markOf(N);
    O.Id = requiredString(N, "id", "an option");
    O.Class = requiredString(N, "class", "an option");
    O.Setter = requiredString(N, "setter", "an option");
    if (N["default"])
      O.Default = number(N["default"], "'default'");
    O.Role = N["role"] ? choiceRole(N["role"]) : "eps";
    O.References = stringList(N, "references");
    return O;
  }

  KernelName kernelName(const YAML::Node &N) const {
    expectMap(N, "a kernel entry");
    allowKeys(N, {"id", "role", "names", "in", "arg", "summary", "references"}, "a kernel entry");
    KernelName K;
    K.Where = markOf(N);
    K.Id = requiredString(N, "id", "a kernel entry");
    K.Role = requiredString(N, "role", "a kernel entry");
    static const std::set<std::string> Roles = {"half-type",
                                                "accumulate",
                                                "subtract",
                                                "multiply",
                                                "exp",
                                                "rsqrt",
                                                "atomic-add",
                                                "to-half",
                                                "half-gemm",
                                                "gemm-compute-type",
                                                "half-compute-type"};
    if (!Roles.count(K.Role)) {
      std::string List;
      for (const auto &R : Roles)
        List += (List.empty() ? "" : ", ") + R;
      fail(N["role"], "'role' must be one of " + List + ", not '" + K.Role + "'");
    }
    K.Names = stringList(N, "names");
    if (K.Names.empty())
      fail(N, "kernel entry '" + K.Id + "' names nothing (give 'names')");
    if (N["in"])
      K.In = choice(N["in"], "'in'", {Format::FP16, Format::BF16});
    if ((K.Role == "half-type" || K.Role == "to-half" || K.Role == "half-compute-type") && !K.In)
      fail(N, "kernel entry '" + K.Id + "' of role " + K.Role + " needs 'in' (fp16 or bf16)");
    if (N["arg"]) {
      double Arg = number(N["arg"], "'arg'");
      if (Arg < 0 || Arg != std::floor(Arg) || Arg > 32)
        fail(N["arg"], "'arg' must be a small non-negative integer");
      K.Arg = static_cast<unsigned>(Arg);
    }
    if (K.Role == "gemm-compute-type" && !K.Arg)
      fail(N, "kernel entry '" + K.Id + "' of role gemm-compute-type needs 'arg'");
    K.Summary = optionalString(N, "summary");
    K.References = stringList(N, "references");
    if (K.References.empty())
      fail(N, "kernel entry '" + K.Id + "' has no 'references' (every rule carries its evidence)");
    return K;
  }

  void read(std::vector<Op> &Ops, std::vector<OptionValue> &Options,
            std::vector<KernelName> &Kernel) const {
    YAML::Node Root;
    try {
      Root = YAML::LoadFile(File);
    } catch (const YAML::ParserException &E) {
      throw LoadError({File, E.mark.line + 1, E.mark.column + 1}, E.msg);
    } catch (const YAML::BadFile &) {
      throw LoadError({File, 0, 0}, "cannot read the file");
    }
    if (!Root || Root.IsNull())
      return;
    expectMap(Root, "a rule file");
    allowKeys(Root, {"version", "ops", "options", "kernel"}, "a rule file");
    if (YAML::Node V = Root["version"])
      if (number(V, "'version'") != 1)
        fail(V, "this mpnanny reads rule files of version 1");
    if (YAML::Node List = Root["ops"]) {
      if (!List.IsSequence())
        fail(List, "'ops' must be a list");
      for (const auto &N : List)
        Ops.push_back(op(N));
    }
    if (YAML::Node List = Root["options"]) {
      if (!List.IsSequence())
        fail(List, "'options' must be a list");
      for (const auto &N : List)
        Options.push_back(option(N));
    }
    if (YAML::Node List = Root["kernel"]) {
      if (!List.IsSequence())
        fail(List, "'kernel' must be a list");
      for (const auto &N : List)
        Kernel.push_back(kernelName(N));
    }
  }

private:
  std::string File;
};

} // namespace

std::shared_ptr<const KnowledgeBase> KnowledgeBase::loadDirectory(const std::string &Dir) {
  std::error_code EC;
  if (!fs::is_directory(Dir, EC))
    throw LoadError({Dir, 0, 0}, "the rules directory does not exist");
  std::vector<std::string> Files;
  for (const auto &Entry : fs::directory_iterator(Dir, EC)) {
    auto Ext = Entry.path().extension().string();
    if (Entry.is_regular_file() && (Ext == ".yaml" || Ext == ".yml"))
      Files.push_back(Entry.path().string());
  }
  if (EC)
    throw LoadError({Dir, 0, 0}, "cannot list the rules directory: " + EC.message());
  if (Files.empty())
    throw LoadError({Dir, 0, 0}, "the rules directory holds no .yaml file");
  std::sort(Files.begin(), Files.end());

  auto KB = std::shared_ptr<KnowledgeBase>(new KnowledgeBase());
  for (const auto &F : Files) {
    try {
      FileReader(F).read(KB->Ops, KB->Options, KB->Kernel);
    } catch (const YAML::Exception &E) {
      // Conversions that yaml-cpp itself rejects (e.g. a map used as a key).
      throw LoadError({F, E.mark.line + 1, E.mark.column + 1}, E.msg);
    }
  }
  std::map<std::string, const Mark *> Seen;
  for (const auto &O : KB->Ops) {
    auto [It, New] = Seen.emplace(O.Id, &O.Where);
    if (!New)
      throw LoadError(O.Where, "duplicate op id '" + O.Id + "' (first defined at " +
                                   It->second->File + ":" + std::to_string(It->second->Line) + ")");
  }
  for (const auto &O : KB->Options) {
    auto [It, New] = Seen.emplace(O.Id, &O.Where);
    if (!New)
      throw LoadError(O.Where, "duplicate id '" + O.Id + "' (first defined at " + It->second->File +
                                   ":" + std::to_string(It->second->Line) + ")");
  }
  for (const auto &K : KB->Kernel) {
    auto [It, New] = Seen.emplace(K.Id, &K.Where);
    if (!New)
      throw LoadError(K.Where, "duplicate id '" + K.Id + "' (first defined at " + It->second->File +
                                   ":" + std::to_string(It->second->Line) + ")");
  }
  KB->index();
  return KB;
}

std::shared_ptr<const KnowledgeBase> KnowledgeBase::cached(const std::string &Dir) {
  static std::mutex Lock;
  static std::map<std::string, std::shared_ptr<const KnowledgeBase>> Cache;
  std::lock_guard<std::mutex> Guard(Lock);
  std::error_code EC;
  std::string Key = fs::weakly_canonical(Dir, EC).string();
  if (EC || Key.empty())
    Key = Dir;
  auto It = Cache.find(Key);
  if (It != Cache.end())
    return It->second;
  auto KB = loadDirectory(Dir);
  Cache.emplace(Key, KB);
  return KB;
}

namespace {
void anchorOfThisObject() {}
} // namespace

std::string installedDataDirectory(const std::string &Name) {
  // The executable or library this file is linked into: mpnanny-check, mpnanny-mcp, or the
  // clang-tidy plugin's checks library.
  const fs::path Object = pathOfObjectHolding(reinterpret_cast<const void *>(&anchorOfThisObject));
  if (Object.empty())
    return "";
  std::error_code EC;
  for (const char *Relative : {MPNANNY_DATA_FROM_BINDIR, MPNANNY_DATA_FROM_LIBDIR}) {
    if (!*Relative)
      continue;
    const fs::path Candidate = Object.parent_path() / Relative / "mpnanny" / Name;
    if (fs::is_directory(Candidate, EC))
      return fs::weakly_canonical(Candidate, EC).string();
  }
  return "";
}

std::string KnowledgeBase::defaultDirectory() {
  if (const char *Env = std::getenv("MPNANNY_RULES"); Env && *Env)
    return Env;
  if (std::string Installed = installedDataDirectory("rules"); !Installed.empty())
    return Installed;
  std::error_code EC;
  if (*MPNANNY_SOURCE_RULES_DIR && fs::is_directory(MPNANNY_SOURCE_RULES_DIR, EC))
    return MPNANNY_SOURCE_RULES_DIR;
  if (*MPNANNY_INSTALLED_RULES_DIR && fs::is_directory(MPNANNY_INSTALLED_RULES_DIR, EC))
    return MPNANNY_INSTALLED_RULES_DIR;
  return MPNANNY_SOURCE_RULES_DIR;
}

void KnowledgeBase::index() {
  for (size_t I = 0; I < Ops.size(); ++I) {
    ById.emplace(Ops[I].Id, I);
    for (const auto &N : Ops[I].Functions)
      ByFunction.emplace(N, I);
    for (const auto &N : Ops[I].Methods)
      ByMethod.emplace(N, I);
    for (const auto &N : Ops[I].Functional)
      ByFunctional.emplace(N, I);
    for (const auto &N : Ops[I].Modules)
      ByModule.emplace(N, I);
  }
}

static const Op *lookup(const std::map<std::string, size_t> &Index, const std::vector<Op> &Ops,
                        const std::string &Name) {
  auto It = Index.find(Name);
  return It == Index.end() ? nullptr : &Ops[It->second];
}

const Op *KnowledgeBase::findFunction(const std::string &Name) const {
  return lookup(ByFunction, Ops, Name);
}
const Op *KnowledgeBase::findMethod(const std::string &Name) const {
  return lookup(ByMethod, Ops, Name);
}
const Op *KnowledgeBase::findFunctional(const std::string &Name) const {
  return lookup(ByFunctional, Ops, Name);
}
const Op *KnowledgeBase::findModule(const std::string &Name) const {
  return lookup(ByModule, Ops, Name);
}
const Op *KnowledgeBase::findById(const std::string &Id) const { return lookup(ById, Ops, Id); }
const OptionValue *KnowledgeBase::findOption(const std::string &Class,
                                             const std::string &Setter) const {
  for (const auto &O : Options)
    if (O.Class == Class && O.Setter == Setter)
      return &O;
  return nullptr;
}

const KernelName *KnowledgeBase::findKernelName(const std::string &Role,
                                                const std::string &Name) const {
  for (const auto &K : Kernel)
    if (K.Role == Role && std::find(K.Names.begin(), K.Names.end(), Name) != K.Names.end())
      return &K;
  return nullptr;
}

std::vector<std::string> KnowledgeBase::atenOps() const {
  std::set<std::string> All;
  for (const auto &O : Ops)
    All.insert(O.Aten.begin(), O.Aten.end());
  return {All.begin(), All.end()};
}

} // namespace mpnanny::kb

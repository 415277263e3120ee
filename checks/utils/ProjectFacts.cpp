//===--- ProjectFacts.cpp - mpnanny ----------------------------------------===//
#include "ProjectFacts.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include <mutex>

namespace clang::tidy::mpnanny {

using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;

std::optional<kb::Format> parseFormat(llvm::StringRef Name) {
  for (kb::Format F : {kb::Format::FP32, kb::Format::FP16, kb::Format::BF16})
    if (Name == kb::toString(F))
      return F;
  return std::nullopt;
}

namespace {

// Every reader below names what it expected, so that a damaged file says where.
struct Reader {
  std::string &Error;
  bool failed() const { return !Error.empty(); }
  void fail(const std::string &What) {
    if (Error.empty())
      Error = What;
  }
  const Object *object(const Value *V, const char *What) {
    const Object *O = V ? V->getAsObject() : nullptr;
    if (!O)
      fail(std::string(What) + " is not an object");
    return O;
  }
  std::string string(const Object &O, llvm::StringRef Key) {
    if (auto S = O.getString(Key))
      return S->str();
    return "";
  }
  unsigned number(const Object &O, llvm::StringRef Key) {
    return static_cast<unsigned>(O.getInteger(Key).value_or(0));
  }
  kb::Format format(const Object &O, llvm::StringRef Key) {
    auto F = parseFormat(string(O, Key));
    if (!F)
      fail("'" + Key.str() + "' is not fp32, fp16 or bf16");
    return F.value_or(kb::Format::FP32);
  }
};

Value placeJson(const Place &P) {
  return Object{{"file", P.File}, {"line", P.Line}, {"column", P.Column}};
}

Place placeFrom(const Value *V) {
  Place P;
  if (const Object *O = V ? V->getAsObject() : nullptr) {
    P.File = O->getString("file").value_or("").str();
    P.Line = static_cast<unsigned>(O->getInteger("line").value_or(0));
    P.Column = static_cast<unsigned>(O->getInteger("column").value_or(0));
  }
  return P;
}

Value toggleJson(const ModelToggle &T) {
  Object O{{"order", T.Order},
           {"on", T.On},
           {"dtype", kb::toString(T.Dtype)},
           {"where", placeJson(T.Where.At)}};
  // Written only when set, so that facts without them read as before.
  if (T.Cpu)
    O["cpu"] = true;
  if (T.Restore)
    O["restore"] = true;
  return O;
}

ModelToggle toggleFrom(const Object &O, Reader &R) {
  ModelToggle T;
  T.Order = R.number(O, "order");
  T.On = O.getBoolean("on").value_or(false);
  T.Dtype = R.format(O, "dtype");
  T.Where.At = placeFrom(O.get("where"));
  T.Cpu = O.getBoolean("cpu").value_or(false);
  T.Restore = O.getBoolean("restore").value_or(false);
  return T;
}

Value formatSeenJson(const std::pair<kb::Format, Seen> &F) {
  return Object{{"format", kb::toString(F.first)}, {"where", placeJson(F.second.At)}};
}

std::pair<kb::Format, Seen> formatSeenFrom(const Object &O, Reader &R) {
  return {R.format(O, "format"), Seen{SourceLocation(), placeFrom(O.get("where"))}};
}

Value functionJson(const ModelFunction &F) {
  Object O{{"name", F.Name}, {"class", F.Class}, {"constructor", F.IsConstructor}};
  if (F.Marker)
    O["marker"] = formatSeenJson(*F.Marker);
  if (F.ConvertsThis)
    O["converts"] = formatSeenJson(*F.ConvertsThis);
  Array Toggles, Calls, Guards;
  for (const auto &T : F.Toggles)
    Toggles.push_back(toggleJson(T));
  for (const auto &C : F.Calls)
    Calls.push_back(Object{{"order", C.Order},
                           {"callee", C.Callee},
                           {"object", C.Object},
                           {"where", placeJson(C.Where.At)}});
  for (const auto &G : F.Guards)
    Guards.push_back(Object{{"order", G.Order},
                            {"end", G.ScopeEnd},
                            {"constructor", G.Constructor},
                            {"where", placeJson(G.Where.At)}});
  if (F.ClearsAutocastCache)
    O["clears_autocast_cache"] = placeJson(F.ClearsAutocastCache->At);
  O["toggles"] = std::move(Toggles);
  O["calls"] = std::move(Calls);
  O["guards"] = std::move(Guards);
  return O;
}

ModelFunction functionFrom(const std::string &Key, const Object &O, Reader &R) {
  ModelFunction F;
  F.Key = Key;
  F.Name = R.string(O, "name");
  F.Class = R.string(O, "class");
  F.IsConstructor = O.getBoolean("constructor").value_or(false);
  if (const Object *M = O.getObject("marker"))
    F.Marker = formatSeenFrom(*M, R);
  if (const Object *C = O.getObject("converts"))
    F.ConvertsThis = formatSeenFrom(*C, R);
  if (const Value *Clear = O.get("clears_autocast_cache"))
    F.ClearsAutocastCache = Seen{SourceLocation(), placeFrom(Clear)};
  if (const Array *A = O.getArray("toggles"))
    for (const Value &V : *A)
      if (const Object *T = R.object(&V, "a toggle"))
        F.Toggles.push_back(toggleFrom(*T, R));
  if (const Array *A = O.getArray("calls"))
    for (const Value &V : *A)
      if (const Object *C = R.object(&V, "a call"))
        F.Calls.push_back({R.number(*C, "order"), R.string(*C, "callee"), R.string(*C, "object"),
                           Seen{SourceLocation(), placeFrom(C->get("where"))}});
  if (const Array *A = O.getArray("guards"))
    for (const Value &V : *A)
      if (const Object *G = R.object(&V, "a guard"))
        F.Guards.push_back({R.number(*G, "order"), R.number(*G, "end"), R.string(*G, "constructor"),
                            Seen{SourceLocation(), placeFrom(G->get("where"))}});
  return F;
}

Value conversionJson(const Conversion &C) {
  return Object{
      {"format", kb::toString(C.Format)}, {"name", C.Name}, {"where", placeJson(C.Where.At)}};
}

Conversion conversionFrom(const Object &O, Reader &R) {
  return Conversion{R.format(O, "format"), R.string(O, "name"),
                    Seen{SourceLocation(), placeFrom(O.get("where"))}};
}

Value dtypeJson(const DtypeFact &D) {
  return Object{{"format", kb::toString(D.Format)}, {"where", placeJson(D.Where.At)}};
}

DtypeFact dtypeFrom(const Object &O, Reader &R) {
  return DtypeFact{R.format(O, "format"), Seen{SourceLocation(), placeFrom(O.get("where"))}};
}

kb::Format lowerFormat(kb::Format A, kb::Format B) {
  auto Rank = [](kb::Format X) {
    return X == kb::Format::FP16 ? 0 : X == kb::Format::BF16 ? 1 : 2;
  };
  return Rank(A) <= Rank(B) ? A : B;
}

} // namespace

Value UnitFacts::toJson() const {
  Object Functions, Classes, Subs, Names, Dtypes;
  for (const auto &F : this->Functions)
    Functions[F.Key] = functionJson(F);
  for (const auto &[Key, C] : Conversions)
    Classes[Key] = conversionJson(C);
  for (const auto &[Key, List] : Submodules) {
    Array A;
    for (const auto &S : List)
      A.push_back(S);
    Subs[Key] = std::move(A);
  }
  for (const auto &[Key, Name] : ClassNames)
    Names[Key] = Name;
  for (const auto &[Key, D] : this->Dtypes)
    Dtypes[Key] = dtypeJson(D);
  Array InputList;
  for (const auto &I : Inputs)
    InputList.push_back(I);
  return Object{{"file", File},
                {"inputs", std::move(InputList)},
                {"functions", std::move(Functions)},
                {"classes", std::move(Classes)},
                {"submodules", std::move(Subs)},
                {"class_names", std::move(Names)},
                {"dtypes", std::move(Dtypes)}};
}

std::optional<UnitFacts> UnitFacts::fromJson(const Value &V, std::string &Error) {
  Reader R{Error};
  const Object *O = R.object(&V, "a unit's facts");
  if (!O)
    return std::nullopt;
  UnitFacts U;
  U.File = R.string(*O, "file");
  if (const Array *A = O->getArray("inputs"))
    for (const Value &I : *A)
      if (auto Str = I.getAsString())
        U.Inputs.push_back(Str->str());
  if (const Object *Fs = O->getObject("functions"))
    for (const auto &[Key, F] : *Fs)
      if (const Object *FO = R.object(&F, "a function"))
        U.Functions.push_back(functionFrom(Key.str(), *FO, R));
  if (const Object *Cs = O->getObject("classes"))
    for (const auto &[Key, C] : *Cs)
      if (const Object *CO = R.object(&C, "a class"))
        U.Conversions[Key.str()] = conversionFrom(*CO, R);
  if (const Object *Ss = O->getObject("submodules"))
    for (const auto &[Key, List] : *Ss)
      if (const Array *A = List.getAsArray())
        for (const Value &S : *A)
          if (auto Str = S.getAsString())
            U.Submodules[Key.str()].push_back(Str->str());
  if (const Object *Ns = O->getObject("class_names"))
    for (const auto &[Key, N] : *Ns)
      if (auto Str = N.getAsString())
        U.ClassNames[Key.str()] = Str->str();
  if (const Object *Ds = O->getObject("dtypes"))
    for (const auto &[Key, D] : *Ds)
      if (const Object *DO = R.object(&D, "a dtype"))
        U.Dtypes[Key.str()] = dtypeFrom(*DO, R);
  if (R.failed())
    return std::nullopt;
  return U;
}

ProjectFacts ProjectFacts::merge(const std::vector<UnitFacts> &Units) {
  PrecisionModel Model;
  std::map<std::string, DtypeFact> Dtypes;
  for (const UnitFacts &U : Units) {
    for (const auto &[Key, Name] : U.ClassNames)
      Model.ClassNames.emplace(Key, Name);
    for (const auto &[Key, List] : U.Submodules) {
      auto &Into = Model.Submodules[Key];
      for (const auto &S : List)
        if (std::find(Into.begin(), Into.end(), S) == Into.end())
          Into.push_back(S);
    }
    // A function defined in a header is read by every unit that includes it: the first
    // reading stands for all (they are the same code).
    for (const ModelFunction &F : U.Functions)
      Model.Functions.emplace(F.Key, F);
    for (const auto &[Key, D] : U.Dtypes) {
      auto [It, New] = Dtypes.emplace(Key, D);
      if (!New)
        It->second.Format = lowerFormat(It->second.Format, D.Format);
    }
  }
  // Conversions after every class's modules are known.
  for (const UnitFacts &U : Units)
    for (const auto &[Key, C] : U.Conversions)
      Model.markConverted(Key, C.Format, C.Where);
  Model.resolve();

  ProjectFacts Out;
  for (const auto &[Key, F] : Model.Functions) {
    ExternalFunction E;
    if (F.Inherited.Value != kb::Precision::FP32)
      E.Inherited = F.Inherited;
    E.NetToggle = F.NetToggle;
    E.ConvertsThis = F.ConvertsThis;
    if (E.Inherited || E.NetToggle || E.ConvertsThis)
      Out.Functions[Key] = E;
  }
  for (const auto &[Key, F] : Model.Functions)
    if (F.ClearsAutocastCache)
      Out.AutocastCacheClears.push_back(F.ClearsAutocastCache->At);
  for (const auto &[Key, C] : Model.Converted)
    Out.Classes[Key] = C;
  for (const auto &[Key, D] : Dtypes)
    if (D.Format != kb::Format::FP32)
      Out.Dtypes[Key] = D;
  return Out;
}

Value ProjectFacts::toJson() const {
  Object Fs, Cs, Ds;
  for (const auto &[Key, E] : Functions) {
    Object O;
    if (E.Inherited) {
      O["precision"] = kb::toString(E.Inherited->Value);
      O["where"] = placeJson(E.Inherited->Elsewhere);
      O["why"] = E.Inherited->Why;
      if (E.Inherited->CpuAutocast)
        O["cpu_autocast"] = true;
    }
    if (E.NetToggle)
      O["toggle"] = toggleJson(*E.NetToggle);
    if (E.ConvertsThis)
      O["converts"] = formatSeenJson(*E.ConvertsThis);
    Fs[Key] = std::move(O);
  }
  for (const auto &[Key, C] : Classes)
    Cs[Key] = conversionJson(C);
  for (const auto &[Key, D] : Dtypes)
    Ds[Key] = dtypeJson(D);
  Array Clears;
  for (const Place &P : AutocastCacheClears)
    Clears.push_back(placeJson(P));
  return Object{{"version", 1},
                {"functions", std::move(Fs)},
                {"classes", std::move(Cs)},
                {"dtypes", std::move(Ds)},
                {"autocast_cache_clears", std::move(Clears)}};
}

std::optional<ProjectFacts> ProjectFacts::fromJson(const Value &V, std::string &Error) {
  Reader R{Error};
  const Object *O = R.object(&V, "the facts file");
  if (!O)
    return std::nullopt;
  if (O->getInteger("version").value_or(0) != 1) {
    R.fail("unknown version (expected 1)");
    return std::nullopt;
  }
  ProjectFacts P;
  if (const Object *Fs = O->getObject("functions"))
    for (const auto &[Key, F] : *Fs) {
      const Object *FO = R.object(&F, "a function");
      if (!FO)
        break;
      ExternalFunction E;
      if (auto Name = FO->getString("precision")) {
        auto Value = kb::parsePrecision(Name->str());
        if (!Value) {
          R.fail("'precision' of " + Key.str() + " is not a precision");
          break;
        }
        PrecisionReason Why;
        Why.Value = *Value;
        Why.Elsewhere = placeFrom(FO->get("where"));
        Why.Why = FO->getString("why").value_or("").str();
        Why.CpuAutocast = FO->getBoolean("cpu_autocast").value_or(false);
        E.Inherited = Why;
      }
      if (const Object *T = FO->getObject("toggle"))
        E.NetToggle = toggleFrom(*T, R);
      if (const Object *C = FO->getObject("converts"))
        E.ConvertsThis = formatSeenFrom(*C, R);
      P.Functions[Key.str()] = E;
    }
  if (const Object *Cs = O->getObject("classes"))
    for (const auto &[Key, C] : *Cs)
      if (const Object *CO = R.object(&C, "a class"))
        P.Classes[Key.str()] = conversionFrom(*CO, R);
  if (const Object *Ds = O->getObject("dtypes"))
    for (const auto &[Key, D] : *Ds)
      if (const Object *DO = R.object(&D, "a dtype"))
        P.Dtypes[Key.str()] = dtypeFrom(*DO, R);
  if (const Array *Clears = O->getArray("autocast_cache_clears"))
    for (const Value &C : *Clears)
      P.AutocastCacheClears.push_back(placeFrom(&C));
  if (R.failed())
    return std::nullopt;
  return P;
}

std::shared_ptr<const ProjectFacts> ProjectFacts::load(const std::string &Path,
                                                       std::string &Error) {
  struct Entry {
    llvm::sys::TimePoint<> Modified;
    uint64_t Size = 0;
    std::shared_ptr<const ProjectFacts> Facts;
  };
  static std::mutex Lock;
  static std::map<std::string, Entry> Loaded;
  llvm::sys::fs::file_status Status;
  if (std::error_code EC = llvm::sys::fs::status(Path, Status)) {
    Error = Path + ": " + EC.message();
    return nullptr;
  }
  std::lock_guard<std::mutex> Guard(Lock);
  auto It = Loaded.find(Path);
  if (It != Loaded.end() && It->second.Modified == Status.getLastModificationTime() &&
      It->second.Size == Status.getSize())
    return It->second.Facts;
  auto Buffer = llvm::MemoryBuffer::getFile(Path);
  if (!Buffer) {
    Error = Path + ": " + Buffer.getError().message();
    return nullptr;
  }
  auto Parsed = llvm::json::parse((*Buffer)->getBuffer());
  if (!Parsed) {
    Error = Path + ": not JSON: " + llvm::toString(Parsed.takeError());
    return nullptr;
  }
  std::string Why;
  auto Facts = fromJson(*Parsed, Why);
  if (!Facts) {
    Error = Path + ": not an mpnanny facts file: " + Why;
    return nullptr;
  }
  auto Shared = std::make_shared<const ProjectFacts>(std::move(*Facts));
  Loaded[Path] = {Status.getLastModificationTime(), Status.getSize(), Shared};
  return Shared;
}

} // namespace clang::tidy::mpnanny

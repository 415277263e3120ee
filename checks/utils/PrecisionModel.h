//===--- PrecisionModel.h - mpnanny ------------------------------*- C++ -*-===//
//
// Which precision each function computes in, as a model with no AST in it: functions
// (keyed by USR) with the autocast switches, calls and guard objects of their bodies in
// statement order, and the module classes converted to half or bf16. The same model is
// built from one translation unit (PrecisionContext) and from the facts of every unit of a
// project (ProjectFacts), so that a model converted in main.cpp makes the layers of
// layers.cpp fp16, and a trainer that enables autocast in trainer.cpp makes the forward it
// calls in model.cpp autocast-fp16.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_UTILS_PRECISIONMODEL_H
#define MPNANNY_CHECKS_UTILS_PRECISIONMODEL_H

#include "KnowledgeBase.h"
#include "clang/Basic/SourceLocation.h"
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace clang::tidy::mpnanny {

namespace kb = ::mpnanny::kb;

/// A place in the project, for reasons that come from another file than the one scanned.
struct Place {
  std::string File;
  unsigned Line = 0, Column = 0;
  bool valid() const { return !File.empty(); }
  /// "src/main.cpp:42:7"
  std::string str() const;
};

/// Why code has the precision it has, for the note under a finding: a location in the
/// translation unit when it is there, else a place in another file of the project.
struct PrecisionReason {
  kb::Precision Value = kb::Precision::FP32;
  SourceLocation Where;
  std::string Why;
  Place Elsewhere; ///< where Where is not in this translation unit
  /// For an autocast precision: CPU autocast (`set_autocast_enabled(at::kCPU, true)`), whose
  /// op list is shorter than CUDA's (kb::Op::AutocastCpu).
  bool CpuAutocast = false;
};

/// Where a fact was seen: a location in this translation unit, or a place elsewhere.
struct Seen {
  SourceLocation Loc;
  Place At;
};

struct ModelToggle {
  unsigned Order = 0; ///< statement order within the function
  bool On = false;
  kb::Format Dtype = kb::Format::FP16;
  Seen Where;
  bool Cpu = false; ///< CPU autocast (at::kCPU, set_cpu_enabled), not CUDA's
  /// Back to the state saved before (`bool was = is_enabled(); ... set_enabled(was)`): the
  /// code after it runs as the function began, and a call of the function changes nothing.
  bool Restore = false;
};

struct ModelCall {
  unsigned Order = 0;
  std::string Callee; ///< USR of the callee (its template pattern for instantiations)
  std::string Object; ///< USR of the object's class, for method calls on user classes
  Seen Where;
};

/// A guard object: its constructor may switch autocast on until its scope ends.
struct ModelGuard {
  unsigned Order = 0, ScopeEnd = 0;
  std::string Constructor; ///< USR
  Seen Where;
};

struct ModelFunction {
  std::string Key;   ///< USR
  std::string Name;  ///< qualified, for messages
  std::string Class; ///< USR of the class of a method, else empty
  bool IsConstructor = false;
  /// The function's own evidence of a format: `.half()`, `torch::kHalf` in its body.
  std::optional<std::pair<kb::Format, Seen>> Marker;
  /// A method that converts its own object (`this->to(torch::kHalf)`, a `to_half()`).
  std::optional<std::pair<kb::Format, Seen>> ConvertsThis;
  std::vector<ModelToggle> Toggles; ///< autocast switches written in the body
  std::vector<ModelCall> Calls;
  std::vector<ModelGuard> Guards;
  /// Where the body calls at::autocast::clear_cache(), if it does.
  std::optional<Seen> ClearsAutocastCache;

  // Resolved by PrecisionModel::resolve().
  std::vector<ModelToggle> Effective;   ///< own switches, callees' and guards', in order
  std::optional<ModelToggle> NetToggle; ///< the autocast state a call leaves behind
  PrecisionReason Inherited;
};

struct Conversion {
  kb::Format Format = kb::Format::FP16;
  std::string Name; ///< the class's name, for messages
  Seen Where;
};

/// What other translation units know about a function not defined in this one.
struct ExternalFunction {
  std::optional<ModelToggle> NetToggle;
  std::optional<std::pair<kb::Format, Seen>> ConvertsThis;
  std::optional<PrecisionReason> Inherited;
};

class PrecisionModel {
public:
  std::map<std::string, ModelFunction> Functions;
  std::map<std::string, Conversion> Converted; ///< class USR -> conversion
  std::map<std::string, std::vector<std::string>>
      Submodules;                                   ///< class USR -> module fields' classes
  std::map<std::string, std::string> ClassNames;    ///< class USR -> name
  std::map<std::string, ExternalFunction> External; ///< from the project's facts
  /// The precision the project declares (the Precision option): what code that shows no
  /// evidence of its own computes in. Evidence in the code wins over it.
  std::optional<PrecisionReason> Baseline;

  /// Marks a class converted, with every module it holds (module->to() converts them all).
  void markConverted(const std::string &Class, kb::Format F, const Seen &Where);
  /// Switches through callees and guards, conversions through converting methods, and the
  /// precision each function inherits from its callers (the riskiest call site wins).
  void resolve();
  /// The precision at a point of a function: its statement order.
  PrecisionReason at(const ModelFunction &F, unsigned Order) const;
  /// The precision a switch that turns autocast on gives the code after it, with where and why.
  static PrecisionReason switchedOnHere(const ModelToggle &On);
  /// The precision a class's code runs in, when the class is converted.
  std::optional<PrecisionReason> classPrecision(const std::string &Class) const;

  static int riskRank(kb::Precision P);

private:
  std::optional<ModelToggle> netToggleOf(const std::string &Key) const;
  std::optional<std::pair<kb::Format, Seen>> convertsThisOf(const std::string &Key) const;
  void resolveToggles();
  void resolveConversions();
  void propagate();
};

} // namespace clang::tidy::mpnanny

#endif

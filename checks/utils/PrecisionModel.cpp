//===--- PrecisionModel.cpp - mpnanny --------------------------------------===//
#include "PrecisionModel.h"

#include <algorithm>

namespace clang::tidy::mpnanny {

using kb::Format;
using kb::Precision;

std::string Place::str() const {
  std::string S = File;
  if (Line) {
    S += ":" + std::to_string(Line);
    if (Column)
      S += ":" + std::to_string(Column);
  }
  return S;
}

static Precision plainPrecision(Format F) {
  return F == Format::FP16   ? Precision::FP16
         : F == Format::BF16 ? Precision::BF16
                             : Precision::FP32;
}

static Precision autocastPrecision(Format F) {
  return F == Format::BF16 ? Precision::AutocastBF16 : Precision::AutocastFP16;
}

static PrecisionReason reasonAt(Precision P, const Seen &Where, std::string Why) {
  PrecisionReason R;
  R.Value = P;
  R.Where = Where.Loc;
  R.Elsewhere = Where.At;
  R.Why = std::move(Why);
  return R;
}

int PrecisionModel::riskRank(Precision P) {
  switch (P) {
  case Precision::FP32: return 0;
  case Precision::AutocastBF16: return 1;
  case Precision::AutocastFP16: return 2;
  case Precision::BF16: return 3;
  case Precision::FP16: return 4;
  }
  return 0;
}

void PrecisionModel::markConverted(const std::string &Class, Format F, const Seen &Where) {
  if (Class.empty())
    return;
  auto [It, New] = Converted.emplace(Class, Conversion{F, ClassNames[Class], Where});
  // Converted to fp32 in one place and to half in another: the half one can fail.
  if (!New && !(It->second.Format == Format::FP32 && F != Format::FP32))
    return;
  if (!New)
    It->second = Conversion{F, ClassNames[Class], Where};
  auto Held = Submodules.find(Class);
  if (Held == Submodules.end())
    return;
  for (const std::string &Sub : Held->second)
    markConverted(Sub, F, Where);
}

std::optional<ModelToggle> PrecisionModel::netToggleOf(const std::string &Key) const {
  if (auto It = Functions.find(Key); It != Functions.end())
    return It->second.NetToggle;
  if (auto It = External.find(Key); It != External.end())
    return It->second.NetToggle;
  return std::nullopt;
}

std::optional<std::pair<Format, Seen>>
PrecisionModel::convertsThisOf(const std::string &Key) const {
  if (auto It = Functions.find(Key); It != Functions.end())
    return It->second.ConvertsThis;
  if (auto It = External.find(Key); It != External.end())
    return It->second.ConvertsThis;
  return std::nullopt;
}

void PrecisionModel::resolveToggles() {
  // What calling a function leaves behind: its last switch, its callees' included (an
  // `enable_amp()` that calls `at::autocast::set_enabled(true)`); a guard's switch ends with
  // its scope, inside the function, so it is not left behind. A handful of rounds reaches
  // the fixed point for any realistic helper depth.
  auto ByOrder = [](const ModelToggle &A, const ModelToggle &B) { return A.Order < B.Order; };
  for (int Round = 0; Round < 8; ++Round) {
    bool Changed = false;
    for (auto &[Key, F] : Functions) {
      std::vector<ModelToggle> Switches = F.Toggles;
      for (const ModelCall &C : F.Calls) {
        if (C.Callee == Key)
          continue;
        // A constructor's switch belongs to the guard object it builds (below).
        auto Callee = Functions.find(C.Callee);
        if (Callee != Functions.end() && Callee->second.IsConstructor)
          continue;
        if (auto Net = netToggleOf(C.Callee))
          Switches.push_back({C.Order, Net->On, Net->Dtype, C.Where, Net->Cpu});
      }
      std::stable_sort(Switches.begin(), Switches.end(), ByOrder);
      // A function whose last switch restores the saved state leaves its caller's as it was.
      std::optional<ModelToggle> Net;
      if (!Switches.empty() && !Switches.back().Restore)
        Net = Switches.back();
      bool Same = Net.has_value() == F.NetToggle.has_value() &&
                  (!Net || (Net->On == F.NetToggle->On && Net->Dtype == F.NetToggle->Dtype &&
                            Net->Cpu == F.NetToggle->Cpu));
      if (!Same) {
        F.NetToggle = Net;
        Changed = true;
      }
      F.Effective = std::move(Switches);
    }
    if (!Changed)
      break;
  }
  for (auto &[Key, F] : Functions) {
    for (const ModelGuard &G : F.Guards) {
      auto Net = netToggleOf(G.Constructor);
      if (!Net || !Net->On)
        continue;
      F.Effective.push_back({G.Order, true, Net->Dtype, G.Where, Net->Cpu});
      F.Effective.push_back({G.ScopeEnd, false, Net->Dtype, G.Where, Net->Cpu});
    }
    std::stable_sort(F.Effective.begin(), F.Effective.end(), ByOrder);
  }
}

void PrecisionModel::resolveConversions() {
  // `model->to_half()` converts the model's own class when to_half converts `*this`.
  for (const auto &[Key, F] : Functions)
    for (const ModelCall &C : F.Calls)
      if (!C.Object.empty())
        if (auto Converts = convertsThisOf(C.Callee))
          markConverted(C.Object, Converts->first, C.Where);
  for (const auto &[Key, F] : Functions)
    if (F.ConvertsThis && !F.Class.empty())
      markConverted(F.Class, F.ConvertsThis->first, F.ConvertsThis->second);
}

std::optional<PrecisionReason> PrecisionModel::classPrecision(const std::string &Class) const {
  auto It = Converted.find(Class);
  if (Class.empty() || It == Converted.end())
    return std::nullopt;
  // Converted to fp32: evidence against a half baseline, and nothing to say without one.
  if (It->second.Format == Format::FP32 && !Baseline)
    return std::nullopt;
  return reasonAt(plainPrecision(It->second.Format), It->second.Where,
                  "the module '" + It->second.Name + "' is converted to " +
                      kb::toString(It->second.Format) + " here");
}

PrecisionReason PrecisionModel::switchedOnHere(const ModelToggle &On) {
  PrecisionReason R =
      reasonAt(autocastPrecision(On.Dtype), On.Where,
               On.Cpu ? "CPU autocast is enabled here" : "autocast is enabled here");
  R.CpuAutocast = On.Cpu;
  return R;
}

PrecisionReason PrecisionModel::at(const ModelFunction &F, unsigned Order) const {
  const ModelToggle *Last = nullptr;
  for (const ModelToggle &T : F.Effective)
    if (T.Order <= Order)
      Last = T.Restore ? nullptr : &T; // restored: the state the function began with
  if (Last && Last->On)
    return switchedOnHere(*Last);
  if (!Last && kb::isAutocast(F.Inherited.Value))
    return F.Inherited;
  if (F.Marker)
    return reasonAt(plainPrecision(F.Marker->first), F.Marker->second,
                    std::string("this function converts to ") + kb::toString(F.Marker->first) +
                        " here");
  if (auto Converted = classPrecision(F.Class))
    return *Converted;
  if (Last && !Last->On)
    return reasonAt(Precision::FP32, Last->Where, "autocast is disabled here");
  // Propagation only ever raises a callee above fp32: fp32 here means no caller said more.
  if (F.Inherited.Value == Precision::FP32 && Baseline)
    return *Baseline;
  return F.Inherited;
}

void PrecisionModel::propagate() {
  for (auto &[Key, F] : Functions)
    if (auto It = External.find(Key);
        It != External.end() && It->second.Inherited &&
        riskRank(It->second.Inherited->Value) > riskRank(F.Inherited.Value))
      F.Inherited = *It->second.Inherited;
  // Callees inherit the riskiest context they are called from; a handful of rounds
  // reaches the fixed point for any realistic call depth.
  for (int Round = 0; Round < 16; ++Round) {
    bool Changed = false;
    for (auto &[Key, F] : Functions)
      for (const ModelCall &C : F.Calls) {
        auto It = Functions.find(C.Callee);
        if (It == Functions.end() || C.Callee == Key)
          continue;
        PrecisionReason Here = at(F, C.Order);
        ModelFunction &G = It->second;
        if (riskRank(Here.Value) > riskRank(G.Inherited.Value)) {
          G.Inherited = reasonAt(Here.Value, C.Where,
                                 "called from '" + F.Name + "' in " + kb::toString(Here.Value) +
                                     " context here");
          G.Inherited.CpuAutocast = Here.CpuAutocast;
          Changed = true;
        }
      }
    if (!Changed)
      break;
  }
}

void PrecisionModel::resolve() {
  resolveToggles();
  resolveConversions();
  propagate();
}

} // namespace clang::tidy::mpnanny

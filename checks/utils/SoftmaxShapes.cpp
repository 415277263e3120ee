//===--- SoftmaxShapes.cpp - mpnanny ---------------------------------------===//
#include "SoftmaxShapes.h"

#include "TorchCalls.h"

namespace clang::tidy::mpnanny {

const Expr *resolveStableLocals(const Expr *E, const RangeAnalysis &Ranges, bool *Direct) {
  for (int Depth = 0; E && Depth < 16; ++Depth) {
    E = ignoreConversions(E);
    const auto *Ref = dyn_cast<DeclRefExpr>(E);
    if (!Ref)
      return E;
    const Expr *Init = Ranges.stableInitializer(dyn_cast<VarDecl>(Ref->getDecl()));
    if (!Init)
      return E;
    if (Direct)
      *Direct = false;
    E = Init;
  }
  return E;
}

/// A maximum is taken somewhere in S, following stable locals.
static bool containsMax(const Stmt *S, const RangeAnalysis &Ranges, int Depth = 0) {
  bool Found = false;
  visitDescendants(S, [&](const Stmt *T) {
    if (const auto *Call = dyn_cast<CallExpr>(T))
      if (const FunctionDecl *Callee = Call->getDirectCallee(); Callee && Callee->getIdentifier())
        if (Callee->getName() == "amax" || Callee->getName() == "max" ||
            Callee->getName() == "logsumexp")
          Found = true;
    if (const auto *Ref = dyn_cast<DeclRefExpr>(T); Ref && !Found && Depth < 8)
      if (const Expr *Init = Ranges.stableInitializer(dyn_cast<VarDecl>(Ref->getDecl())))
        Found = containsMax(Init, Ranges, Depth + 1);
    return !Found;
  });
  return Found;
}

bool isShiftedByMax(const Expr *X, const RangeAnalysis &Ranges) {
  X = resolveStableLocals(X, Ranges);
  const auto *Minus = dyn_cast_or_null<CXXOperatorCallExpr>(X);
  const Expr *Shift = nullptr;
  if (Minus && Minus->getOperator() == OO_Minus && Minus->getNumArgs() == 2)
    Shift = Minus->getArg(1);
  else if (const auto *Call = dyn_cast_or_null<CXXMemberCallExpr>(X))
    if (const auto *M = Call->getMethodDecl();
        M && M->getIdentifier() && (M->getName() == "sub" || M->getName() == "subtract") &&
        Call->getNumArgs() > 0)
      Shift = Call->getArg(0);
  return Shift && containsMax(Shift, Ranges);
}

static bool isConversion(const TorchCall &TC) {
  return TC.Kind == Spelling::Method &&
         (TC.Name == "to" || TC.Name == "toType" || TC.Name == "type" || TC.Name == "half" ||
          TC.Name == "float" || TC.Name == "double" || TC.Name == "bfloat16");
}

std::optional<SoftmaxUnderLog> findSoftmaxUnderLog(const Expr *LogArgument,
                                                   const RangeAnalysis &Ranges,
                                                   const kb::KnowledgeBase &KB,
                                                   const ASTContext &Ctx) {
  SoftmaxUnderLog Found;
  const Expr *E = LogArgument;
  for (int Depth = 0; E && Depth < 16; ++Depth) {
    E = ignoreConversions(E);
    if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
      const Expr *Init = Ranges.stableInitializer(dyn_cast<VarDecl>(Ref->getDecl()));
      if (!Init)
        return std::nullopt;
      Found.Plain = false;
      E = Init;
      continue;
    }
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
      // probs[i], probs.chunk(2)[0]: an element of the probabilities (a list's element is
      // followed to the view op that made the list, below).
      if (Op->getOperator() == OO_Subscript && Op->getNumArgs() == 2) {
        Found.Plain = false;
        E = Op->getArg(0);
        continue;
      }
      // softmax(x) + eps, in either order.
      if (Op->getOperator() != OO_Plus || Op->getNumArgs() != 2)
        return std::nullopt;
      const Expr *Tensor = nullptr;
      for (const Expr *Arg : Op->arguments()) {
        if (isTensorType(Arg->getType()))
          Tensor = Tensor ? nullptr : Arg;
        else if (auto V = evaluateNumber(Arg, Ctx); V && *V >= 0)
          Found.Eps = V;
      }
      if (!Tensor || !Found.Eps)
        return std::nullopt;
      Found.Plain = false;
      E = Tensor;
      continue;
    }
    const auto *Call = dyn_cast<CallExpr>(E);
    auto TC = Call ? classifyTorchCall(*Call) : std::nullopt;
    if (!TC)
      return std::nullopt;
    if (const kb::Op *Join = TC->Self ? nullptr : lookupOp(*TC, KB);
        Join && Join->Transfer == "union" && !TC->Args.empty()) {
      // torch::cat({probs, other}): the log of the joined tensor is the log of each part.
      auto Elements = Ranges.elementsOf(TC->Args.front());
      for (const Expr *Element : Elements ? *Elements : std::vector<const Expr *>{})
        if (auto Inner = findSoftmaxUnderLog(Element, Ranges, KB, Ctx)) {
          Inner->Plain = false;
          Inner->Eps = Found.Eps ? Found.Eps : Inner->Eps;
          Inner->Clamped |= Found.Clamped;
          return Inner;
        }
      return std::nullopt;
    }
    if (!TC->Self)
      return std::nullopt;
    if (isConversion(*TC)) {
      Found.Plain = false;
      E = TC->Self;
      continue;
    }
    const kb::Op *Op = lookupOp(*TC, KB);
    if (!Op)
      return std::nullopt;
    if (Op->Id == "softmax") {
      Found.Softmax = Call;
      return Found;
    }
    if (llvm::StringRef(Op->Id).starts_with("clamp")) {
      Found.Clamped = true;
    } else if (Op->Id == "add" && !TC->Args.empty()) {
      auto V = evaluateNumber(TC->Args[0], Ctx);
      if (!V || *V < 0)
        return std::nullopt;
      Found.Eps = V;
    } else if (Op->Transfer != "identity") {
      return std::nullopt;
    }
    Found.Plain = false;
    E = TC->Self;
  }
  return std::nullopt;
}

} // namespace clang::tidy::mpnanny

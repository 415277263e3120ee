//===--- ParseHealth.cpp - mpnanny -----------------------------------------===//
#include "ParseHealth.h"

#include "FindingLog.h"
#include "LlvmCompat.h"
#include "PrecisionContext.h"
#include "TorchCalls.h"
#include "ValueFlow.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include <memory>
#include <string>
#include <vector>

namespace clang::tidy::mpnanny::parse_health {

namespace {

struct RecordedError {
  FileID File;
  unsigned Offset;
  std::string Text;
};

/// A function body with errors, and what of it is not checked.
struct BrokenFunction {
  /// The first error that may touch LibTorch state; null for a declaration Sema rejected,
  /// of which nothing is checked.
  const RecordedError *FirstError = nullptr;
  /// Nothing from FirstError on is checked (an error outside every statement of the body).
  bool AllFromFirstError = false;
  /// The statements of the body (a loop or a block counts whole) that are not checked.
  llvm::DenseSet<const Stmt *> Unchecked;
};

/// The errors of one translation unit, as the compiler reported them.
struct UnitErrors {
  const SourceManager *SM = nullptr;
  std::vector<RecordedError> Errors;
  bool Summarized = false;
  /// Worked out on first use, after the parse.
  std::optional<llvm::DenseMap<const FunctionDecl *, BrokenFunction>> Broken;
};

/// One translation unit at a time per thread: clang-tidy and mpnanny-check parse a file
/// from start to end on one thread.
thread_local std::shared_ptr<UnitErrors> Current;

/// Sits between the compiler and the consumer it had (clang-tidy's), records where the
/// errors are, and passes everything on unchanged.
class ErrorRecorder : public DiagnosticConsumer {
public:
  ErrorRecorder(DiagnosticConsumer *Next, std::unique_ptr<DiagnosticConsumer> Owned,
                std::shared_ptr<UnitErrors> Unit)
      : Next(Next), Owned(std::move(Owned)), Unit(std::move(Unit)) {}

  void HandleDiagnostic(DiagnosticsEngine::Level Level, const Diagnostic &Info) override {
    DiagnosticConsumer::HandleDiagnostic(Level, Info);
    if (Level >= DiagnosticsEngine::Error && Info.getLocation().isValid() &&
        Info.hasSourceManager()) {
      const SourceManager &SM = Info.getSourceManager();
      SourceLocation L = SM.getExpansionLoc(Info.getLocation());
      llvm::SmallString<160> Text;
      Info.FormatDiagnostic(Text);
      Unit->SM = &SM;
      Unit->Errors.push_back({SM.getFileID(L), SM.getFileOffset(L),
                              SM.getFilename(L).str() + ":" +
                                  std::to_string(SM.getExpansionLineNumber(L)) + ": " +
                                  std::string(Text)});
    }
    if (Next)
      Next->HandleDiagnostic(Level, Info);
  }
  void BeginSourceFile(const LangOptions &LangOpts, const Preprocessor *PP) override {
    if (Next)
      Next->BeginSourceFile(LangOpts, PP);
  }
  void EndSourceFile() override {
    if (Next)
      Next->EndSourceFile();
  }
  void finish() override {
    if (Next)
      Next->finish();
  }
  void clear() override {
    DiagnosticConsumer::clear();
    if (Next)
      Next->clear();
  }
  bool IncludeInDiagnosticCounts() const override {
    return Next ? Next->IncludeInDiagnosticCounts() : true;
  }

private:
  DiagnosticConsumer *Next;
  std::unique_ptr<DiagnosticConsumer> Owned;
  std::shared_ptr<UnitErrors> Unit;
};

thread_local const DiagnosticConsumer *Installed = nullptr;

/// Whether an expression that holds an error may have meant to touch LibTorch state: it names
/// a value, or calls a function or a method, whose type may carry a tensor, a module or a dtype.
/// A local whose `auto` type an error left undeduced holds what its initializer gave.
bool mayTouchTorch(const Expr &E, int Depth = 0) {
  // Recovery left some expressions with no type at all: nothing says what they held.
  const QualType T = E.getType();
  if (Depth > 8 || T.isNull() || (!T->isDependentType() && mayCarryTorchState(T)))
    return true;
  bool Touches = false;
  visitDescendants(&E, [&](const Stmt *S) {
    auto Judge = [&](const NamedDecl *D) {
      if (const auto *Fn = dyn_cast_or_null<FunctionDecl>(D ? D->getAsFunction() : nullptr)) {
        const auto *Method = dyn_cast<CXXMethodDecl>(Fn);
        Touches |=
            mayCarryTorchState(Fn->getReturnType()) ||
            (Method && mayCarryTorchState(QualType(Method->getParent()->getTypeForDecl(), 0)));
      } else if (const auto *Var = dyn_cast_or_null<VarDecl>(D);
                 Var && Var->getType()->isUndeducedType()) {
        Touches |= !Var->getInit() || mayTouchTorch(*Var->getInit(), Depth + 1);
      } else if (const auto *Value = dyn_cast_or_null<ValueDecl>(D)) {
        Touches |= mayCarryTorchState(Value->getType());
      }
    };
    if (const auto *Ref = dyn_cast<DeclRefExpr>(S))
      Judge(Ref->getDecl());
    else if (const auto *Member = dyn_cast<MemberExpr>(S))
      Judge(Member->getMemberDecl());
    else if (const auto *Overloads = dyn_cast<OverloadExpr>(S))
      for (const NamedDecl *D : Overloads->decls())
        Judge(D->getUnderlyingDecl());
    return !Touches;
  });
  return Touches;
}

/// `std::ifstream file(path);` with <fstream> missing, `bool wide = absl::GetFlag(FLAGS_wide)
/// > 0;` with absl's header missing: when every error of a statement lies in a declaration or
/// an expression that touches no tensor, module, optimizer or dtype, the error leaves only
/// numbers, flags and files unknown, as values read at run time are, and the statements after
/// it keep a whole AST. (An expression that holds the error is still not reported, nor one that
/// uses a declaration Sema rejected.) An error in no such part (a statement the parser dropped)
/// may have hidden anything.
bool errorsLeaveTorchAlone(const Stmt &Top, const std::vector<const RecordedError *> &Errors,
                           const SourceManager &SM) {
  using Range = std::pair<SourceLocation, SourceLocation>;
  auto RangeOf = [&](SourceRange R) -> Range {
    return {SM.getExpansionLoc(R.getBegin()), SM.getExpansionRange(R.getEnd()).getEnd()};
  };
  auto Covers = [&](const Range &R, const RecordedError *Error) {
    SourceLocation At = SM.getComposedLoc(Error->File, Error->Offset);
    return !SM.isBeforeInTranslationUnit(At, R.first) &&
           !SM.isBeforeInTranslationUnit(R.second, At);
  };
  std::vector<Range> Parts;
  bool Touches = false;
  visitDescendants(&Top, [&](const Stmt *S) {
    if (Touches)
      return false;
    if (const auto *DS = dyn_cast<DeclStmt>(S)) {
      // `bool wide = absl::GetFlag(FLAGS_wide) > 0;`: the parser may drop an initializer it
      // could not read, leaving only the declared variable, whose type says what it holds.
      Range R = RangeOf(DS->getSourceRange());
      if (llvm::any_of(Errors, [&](const RecordedError *Error) { return Covers(R, Error); })) {
        Parts.push_back(R);
        for (const Decl *D : DS->decls()) {
          const auto *Var = dyn_cast<VarDecl>(D);
          QualType T = Var ? Var->getType() : QualType();
          // `ProjectConfig config(h);`: a type name Sema did not know becomes int, and the
          // real type is unknown; an undeduced `auto` is judged by its initializer, below.
          Touches |= !Var || T.isNull() || (Var->isInvalidDecl() && T->isBuiltinType()) ||
                     (T->isUndeducedType() ? !Var->getInit() : mayCarryTorchState(T));
        }
      }
      return true;
    }
    const auto *E = dyn_cast<Expr>(S);
    if (!E || !E->containsErrors())
      return true;
    Parts.push_back(RangeOf(E->getSourceRange()));
    Touches |= mayTouchTorch(*E);
    return false;
  });
  return !Touches && llvm::all_of(Errors, [&](const RecordedError *Error) {
    return llvm::any_of(Parts, [&](const Range &R) { return Covers(R, Error); });
  });
}

/// What the broken statements of a function body may have changed, for the statements after
/// them: a statement that reads none of it runs on values the compiler saw whole.
struct Changed {
  llvm::DenseSet<const ValueDecl *> Decls;
  /// The identifiers of a statement whose AST lost parts (a declaration Sema rejected, an error
  /// no expression holds): what it named is unknown, so every name in its text counts.
  llvm::StringSet<> Names;
  /// A call in a method that may have changed any member of `this`.
  bool Members = false;

  bool readBy(const Stmt &S) const {
    bool Reads = false;
    visitDescendants(&S, [&](const Stmt *X) {
      const ValueDecl *D = nullptr;
      if (const auto *Ref = dyn_cast<DeclRefExpr>(X))
        D = Ref->getDecl();
      else if (const auto *Member = dyn_cast<MemberExpr>(X)) {
        D = Member->getMemberDecl();
        Reads |= Members && isa<CXXThisExpr>(Member->getBase()->IgnoreParenImpCasts());
      }
      if (D)
        Reads |= Decls.count(D) || (D->getIdentifier() && Names.count(D->getName()));
      return !Reads;
    });
    return Reads;
  }
};

/// A call whose callee Sema could not settle (an argument holds an error, or the name is
/// unknown): its arguments may be bound to non-const references. A LibTorch or standard
/// library function that is not in-place (no trailing '_', no `_out`) writes none of them.
bool mayWriteItsArguments(const Expr &Callee) {
  const auto *Overloads = dyn_cast<OverloadExpr>(Callee.IgnoreParenImpCasts());
  if (!Overloads || Overloads->decls().empty())
    return true;
  return llvm::any_of(Overloads->decls(), [](const NamedDecl *D) {
    D = D->getUnderlyingDecl();
    llvm::StringRef Name = D->getIdentifier() ? D->getName() : "";
    bool Library = isLibTorchDecl(*D) || D->isInStdNamespace();
    return !Library || Name.ends_with("_") || Name.contains("_out");
  });
}

/// Adds to What everything S may write (ValueFlow's writes, every variable it declares), and,
/// for the parts of S that hold an error, the values passed to a call Sema could not settle.
void noteWrites(const Stmt &S, bool InMethod, Changed &What) {
  forEachWrite(&S, [&](const ValueDecl *D) { What.Decls.insert(D); });
  visitDescendants(&S, [&](const Stmt *X) {
    auto Passed = [&](const Expr *Arg) {
      if (const ValueDecl *D = namedValue(Arg))
        What.Decls.insert(D);
    };
    if (const auto *DS = dyn_cast<DeclStmt>(X)) {
      for (const Decl *D : DS->decls())
        if (const auto *Value = dyn_cast<ValueDecl>(D))
          What.Decls.insert(Value);
    } else if (const auto *Recovery = dyn_cast<RecoveryExpr>(X)) {
      for (const Expr *Sub : Recovery->subExpressions())
        Passed(Sub);
      What.Members |= InMethod;
    } else if (const auto *Call = dyn_cast<CallExpr>(X)) {
      const auto *Member = dyn_cast<CXXMemberCallExpr>(Call);
      const CXXMethodDecl *Method = Member ? Member->getMethodDecl() : nullptr;
      // A method of the class, called on `this`, may change its members.
      if (Member && (!Method || !Method->isConst()) &&
          isa<CXXThisExpr>(Member->getImplicitObjectArgument()->IgnoreParenImpCasts()))
        What.Members = true;
      if (Call->containsErrors() && !Call->getDirectCallee() &&
          mayWriteItsArguments(*Call->getCallee())) {
        for (const Expr *Arg : Call->arguments())
          Passed(Arg);
        What.Members |= InMethod;
      }
    }
    return true;
  });
}

/// Whether every error in Top lies in an expression that holds it: the AST kept the statement,
/// with the erroneous part marked. A declaration Sema rejected, or an error with no node, may
/// have lost what it named.
bool errorsHaveNodes(const Stmt &Top, const std::vector<const RecordedError *> &Errors,
                     const SourceManager &SM) {
  std::vector<std::pair<SourceLocation, SourceLocation>> Held;
  bool Rejected = false;
  visitDescendants(&Top, [&](const Stmt *S) {
    if (const auto *DS = dyn_cast<DeclStmt>(S))
      for (const Decl *D : DS->decls())
        Rejected |= D->isInvalidDecl();
    const auto *E = dyn_cast<Expr>(S);
    if (!E || !E->containsErrors())
      return !Rejected;
    Held.push_back(
        {SM.getExpansionLoc(E->getBeginLoc()), SM.getExpansionRange(E->getEndLoc()).getEnd()});
    return false;
  });
  return !Rejected && llvm::all_of(Errors, [&](const RecordedError *Error) {
    SourceLocation At = SM.getComposedLoc(Error->File, Error->Offset);
    return llvm::any_of(Held, [&](const auto &R) {
      return !SM.isBeforeInTranslationUnit(At, R.first) &&
             !SM.isBeforeInTranslationUnit(R.second, At);
    });
  });
}

/// Every identifier in the text of S.
void noteNames(const Stmt &S, const SourceManager &SM, const LangOptions &Lang, Changed &What) {
  SourceLocation Begin = SM.getExpansionLoc(S.getBeginLoc());
  SourceLocation End = SM.getExpansionRange(S.getEndLoc()).getEnd();
  FileID File = SM.getFileID(Begin);
  bool Invalid = false;
  llvm::StringRef Buffer = SM.getBufferData(File, &Invalid);
  if (Invalid || SM.getFileID(End) != File)
    return;
  unsigned Last = SM.getFileOffset(End);
  Lexer Raw(SM.getLocForStartOfFile(File), Lang, Buffer.begin(),
            Buffer.begin() + SM.getFileOffset(Begin), Buffer.end());
  Token T;
  for (bool AtEnd = false; !AtEnd;) {
    AtEnd = Raw.LexFromRawLexer(T);
    if (SM.getFileOffset(T.getLocation()) > Last)
      break;
    if (T.is(tok::raw_identifier))
      What.Names.insert(T.getRawIdentifier());
  }
}

/// Which statements of a function body holding errors are not checked. A statement whose
/// errors may touch LibTorch state is not; nor is a later one that reads what such a statement
/// may have changed (and so on, transitively); the others run on values the compiler saw whole.
/// An error outside every statement (in a parameter, a statement the parser dropped) leaves
/// nothing checked from it on.
BrokenFunction judgeBody(const FunctionDecl &FD, const std::vector<const RecordedError *> &Errors,
                         const SourceManager &SM, const LangOptions &Lang) {
  auto At = [&](const RecordedError *E) { return SM.getComposedLoc(E->File, E->Offset); };
  // The earliest in the source: errors of a template's instantiation come at the end of the
  // unit, after errors further down its body.
  auto Earliest = [&](const std::vector<const RecordedError *> &Some) {
    const RecordedError *First = nullptr;
    for (const RecordedError *E : Some)
      if (!First || SM.isBeforeInTranslationUnit(At(E), At(First)))
        First = E;
    return First;
  };
  BrokenFunction Result;
  const auto *Body = dyn_cast_or_null<CompoundStmt>(FD.getBody());
  if (!Body) {
    Result.FirstError = Earliest(Errors);
    Result.AllFromFirstError = true;
    return Result;
  }
  bool InMethod = isa<CXXMethodDecl>(FD) && !cast<CXXMethodDecl>(FD).isStatic();
  Changed What;
  std::vector<const RecordedError *> Placed;
  for (const Stmt *Top : Body->body()) {
    SourceLocation Begin = SM.getExpansionLoc(Top->getBeginLoc());
    SourceLocation End = SM.getExpansionRange(Top->getEndLoc()).getEnd();
    std::vector<const RecordedError *> Inside;
    for (const RecordedError *E : Errors)
      if (!SM.isBeforeInTranslationUnit(At(E), Begin) && !SM.isBeforeInTranslationUnit(End, At(E)))
        Inside.push_back(E);
    Placed.insert(Placed.end(), Inside.begin(), Inside.end());
    bool Broken = !Inside.empty() && !errorsLeaveTorchAlone(*Top, Inside, SM);
    if (Broken && !Result.FirstError)
      Result.FirstError = Earliest(Inside);
    if (!Broken && !What.readBy(*Top))
      continue;
    Result.Unchecked.insert(Top);
    noteWrites(*Top, InMethod, What);
    if (Broken && !errorsHaveNodes(*Top, Inside, SM))
      noteNames(*Top, SM, Lang, What);
  }
  std::vector<const RecordedError *> Outside;
  for (const RecordedError *E : Errors)
    if (llvm::find(Placed, E) == Placed.end())
      Outside.push_back(E);
  if (!Outside.empty()) {
    Result.FirstError = Earliest(Outside);
    Result.AllFromFirstError = true;
  }
  return Result;
}

const llvm::DenseMap<const FunctionDecl *, BrokenFunction> &
brokenFunctions(const PrecisionContext &Functions, ASTContext &Ctx) {
  UnitErrors &Unit = *Current;
  if (!Unit.Broken) {
    Unit.Broken.emplace();
    const SourceManager &SM = Ctx.getSourceManager();
    llvm::DenseMap<const FunctionDecl *, std::vector<const RecordedError *>> ErrorsIn;
    for (const RecordedError &E : Unit.Errors) {
      if (Unit.SM != &SM)
        break;
      if (const FunctionDecl *FD = Functions.functionAt(SM.getComposedLoc(E.File, E.Offset)))
        ErrorsIn[FD].push_back(&E);
    }
    for (const auto &[FD, Errors] : ErrorsIn)
      if (BrokenFunction Judged = judgeBody(*FD, Errors, SM, Ctx.getLangOpts()); Judged.FirstError)
        Unit.Broken->try_emplace(FD, std::move(Judged));
    // Declarations Sema rejected without an error inside the body's range (a parameter
    // of a type from a missing header is reported at the parameter, which is in range too,
    // but a redeclaration conflict is reported elsewhere).
    for (const FunctionDecl *FD : Functions.functions())
      if (FD->isInvalidDecl())
        Unit.Broken->try_emplace(FD, BrokenFunction{});
  }
  return *Unit.Broken;
}

} // namespace

void keepGoing(Preprocessor &PP) {
  DiagnosticsEngine &Diags = PP.getDiagnostics();
  if (Installed && Diags.getClient() == Installed)
    return; // another mpnanny check asked already, for this translation unit
  Diags.setFatalsAsError(true);
  Diags.setErrorLimit(0);
  Current = std::make_shared<UnitErrors>();
  DiagnosticConsumer *Next = Diags.getClient();
  std::unique_ptr<DiagnosticConsumer> Owned;
  if (Diags.ownsClient())
    Owned = Diags.takeClient();
  auto Recorder = std::make_unique<ErrorRecorder>(Next, std::move(Owned), Current);
  Installed = Recorder.get();
  Diags.setClient(Recorder.release(), /*ShouldOwnClient=*/true);
}

bool inUncheckedPart(const Stmt *Node, SourceLocation Loc, const PrecisionContext &Functions,
                     ASTContext &Ctx) {
  if (!Current || (Current->SM && Current->SM != &Ctx.getSourceManager()))
    return false;
  if (const auto *E = dyn_cast_or_null<Expr>(Node); E && E->containsErrors())
    return true;
  const FunctionDecl *FD = Functions.functionAt(Loc);
  if (!FD)
    return false;
  const auto &Broken = brokenFunctions(Functions, Ctx);
  auto It = Broken.find(FD);
  if (It == Broken.end())
    return false;
  const BrokenFunction &Judged = It->second;
  const auto *Body = dyn_cast_or_null<CompoundStmt>(FD->getBody());
  if (!Judged.FirstError || !Body)
    return true; // an invalid declaration: nothing in it can be trusted
  const SourceManager &SM = Ctx.getSourceManager();
  SourceLocation At = SM.getExpansionLoc(Loc);
  for (const Stmt *Top : Body->body()) {
    SourceLocation Begin = SM.getExpansionLoc(Top->getBeginLoc());
    SourceLocation End = SM.getExpansionRange(Top->getEndLoc()).getEnd();
    if (SM.isBeforeInTranslationUnit(At, Begin) || SM.isBeforeInTranslationUnit(End, At))
      continue;
    if (Judged.AllFromFirstError) {
      SourceLocation ErrorAt =
          SM.getComposedLoc(Judged.FirstError->File, Judged.FirstError->Offset);
      return !SM.isBeforeInTranslationUnit(End, ErrorAt);
    }
    return Judged.Unchecked.count(Top) != 0;
  }
  return true; // not inside any statement of the body (a default argument, say)
}

void summarize(const PrecisionContext &Functions, ASTContext &Ctx) {
  if (!Current || Current->Summarized || (Current->SM && Current->SM != &Ctx.getSourceManager()))
    return;
  Current->Summarized = true;
  const SourceManager &SM = Ctx.getSourceManager();
  ::mpnanny::ParseSummary Summary;
  Summary.File = mainFileName(SM).value_or("");
  std::vector<const FunctionDecl *> All = Functions.functions();
  Summary.Functions = All.size();
  Summary.ShowsReducedPrecision = llvm::any_of(All, [&](const FunctionDecl *FD) {
    return FD->getBody() && Functions.at(*FD->getBody()).Value != kb::Precision::FP32;
  });
  const auto &Broken = brokenFunctions(Functions, Ctx);
  for (const FunctionDecl *FD : All) {
    auto It = Broken.find(FD);
    if (It == Broken.end())
      continue;
    if (Summary.Unchecked++ == 0)
      Summary.FirstUnchecked = FD->getQualifiedNameAsString() +
                               (It->second.FirstError ? " (" + It->second.FirstError->Text + ")"
                                                      : " (invalid declaration)");
  }
  ::mpnanny::FindingLog::recordParse(std::move(Summary));
}

} // namespace clang::tidy::mpnanny::parse_health

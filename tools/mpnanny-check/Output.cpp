//===--- Output.cpp - mpnanny-check ----------------------------------------===//
#include "Output.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

namespace mpnanny::check {

Location locate(const std::string &File, unsigned Offset) {
  static std::map<std::string, std::unique_ptr<llvm::MemoryBuffer>> Cache;
  auto It = Cache.find(File);
  if (It == Cache.end()) {
    auto Buffer = llvm::MemoryBuffer::getFile(File);
    It = Cache.emplace(File, Buffer ? std::move(*Buffer) : nullptr).first;
  }
  Location L{File, 0, 0};
  if (!It->second)
    return L;
  llvm::StringRef Text = It->second->getBuffer();
  if (Offset > Text.size())
    return L;
  llvm::StringRef Before = Text.substr(0, Offset);
  L.Line = static_cast<unsigned>(Before.count('\n')) + 1;
  size_t LineStart = Before.rfind('\n');
  L.Column = Offset - (LineStart == llvm::StringRef::npos ? 0 : LineStart + 1) + 1;
  return L;
}

std::string absolutePath(const std::string &Path, const std::string &Directory) {
  if (Path.empty() || llvm::sys::path::is_absolute(Path))
    return Path;
  llvm::SmallString<256> Abs(Directory);
  if (Abs.empty())
    llvm::sys::fs::current_path(Abs);
  llvm::sys::path::append(Abs, Path);
  llvm::sys::path::remove_dots(Abs, /*remove_dot_dot=*/true);
  return std::string(Abs);
}

static std::string severityOf(const clang::tidy::ClangTidyError &E) {
  return vocab::name(E.DiagLevel == clang::tooling::Diagnostic::Error ? vocab::Severity::Error
                                                                      : vocab::Severity::Warning);
}

std::vector<Finding> collectFindings(const std::vector<clang::tidy::ClangTidyError> &Errors,
                                     const std::vector<FindingDetail> &Details) {
  std::vector<Finding> Out;
  for (const auto &E : Errors) {
    if (!llvm::StringRef(E.DiagnosticName).starts_with("mpnanny-"))
      continue;
    Finding F;
    F.Check = E.DiagnosticName;
    F.Message = E.Message.Message;
    F.Where = locate(absolutePath(E.Message.FilePath, E.BuildDirectory), E.Message.FileOffset);
    F.Offset = E.Message.FileOffset;
    F.Severity = severityOf(E);
    for (const auto &N : E.Notes)
      F.Notes.push_back(
          {N.Message, locate(absolutePath(N.FilePath, E.BuildDirectory), N.FileOffset)});
    for (const auto &[File, Replacements] : E.Message.Fix)
      for (const auto &R : Replacements) {
        Edit Ed;
        Ed.File = absolutePath(R.getFilePath().str(), E.BuildDirectory);
        Ed.Offset = R.getOffset();
        Ed.Length = R.getLength();
        Ed.Text = R.getReplacementText().str();
        Ed.Begin = locate(Ed.File, Ed.Offset);
        Ed.End = locate(Ed.File, Ed.Offset + Ed.Length);
        F.Edits.push_back(std::move(Ed));
      }
    for (const auto &D : Details) {
      // The same spelling location and check identify the detail of this warning.
      if (D.Check == F.Check && D.Offset == F.Offset &&
          (D.File == E.Message.FilePath || D.File == F.Where.File ||
           llvm::StringRef(F.Where.File).ends_with(D.File) ||
           llvm::StringRef(D.File).ends_with(E.Message.FilePath))) {
        F.Function = D.Function;
        F.Expression = D.Expression;
        F.Risk = D.Risk;
        F.Precision = D.Precision;
        F.Fix = D.Fix;
        F.AtenOps = D.AtenOps;
        if (D.Severity == vocab::name(vocab::Severity::Error))
          F.Severity = D.Severity;
        break;
      }
    }
    Out.push_back(std::move(F));
  }
  std::sort(Out.begin(), Out.end(), [](const Finding &A, const Finding &B) {
    return std::tie(A.Where.File, A.Where.Line, A.Where.Column, A.Check) <
           std::tie(B.Where.File, B.Where.Line, B.Where.Column, B.Check);
  });
  Out.erase(std::unique(Out.begin(), Out.end(),
                        [](const Finding &A, const Finding &B) {
                          return A.Where.File == B.Where.File && A.Offset == B.Offset &&
                                 A.Check == B.Check && A.Message == B.Message;
                        }),
            Out.end());
  std::map<std::string, unsigned> Seen;
  for (auto &F : Out) {
    std::string Key = F.Check + "\n" + F.Where.File + "\n" + F.Function + "\n" + F.Expression;
    F.SiteId = siteIdOf(F, Seen[Key]++);
  }
  return Out;
}

std::string siteIdOf(const Finding &F, unsigned Occurrence) {
  // FNV-1a: stable across runs, platforms and compilers, unlike std::hash.
  uint64_t H = 1469598103934665603ULL;
  auto Mix = [&](llvm::StringRef S) {
    for (unsigned char C : S) {
      H ^= C;
      H *= 1099511628211ULL;
    }
    H ^= 0xff;
    H *= 1099511628211ULL;
  };
  llvm::StringRef File = F.Where.File;
  size_t Slash = File.rfind('/');
  Mix(F.Check);
  Mix(Slash == llvm::StringRef::npos ? File : File.substr(Slash + 1));
  Mix(F.Function);
  Mix(F.Expression);
  Mix(std::to_string(Occurrence));
  char Buf[24];
  std::snprintf(Buf, sizeof Buf, "%016llx", static_cast<unsigned long long>(H));
  return Buf;
}

nlohmann::json toJson(const Finding &F) {
  nlohmann::json Notes = nlohmann::json::array();
  for (const auto &N : F.Notes)
    Notes.push_back({{"message", N.Message},
                     {"file", N.Where.File},
                     {"line", N.Where.Line},
                     {"column", N.Where.Column}});
  nlohmann::json FixIts = nlohmann::json::array();
  for (const auto &E : F.Edits)
    FixIts.push_back({{"file", E.File},
                      {"line", E.Begin.Line},
                      {"column", E.Begin.Column},
                      {"end_line", E.End.Line},
                      {"end_column", E.End.Column},
                      {"text", E.Text}});
  return {{"check", F.Check},         {"severity", F.Severity},
          {"file", F.Where.File},     {"line", F.Where.Line},
          {"column", F.Where.Column}, {"function", F.Function},
          {"message", F.Message},     {"fix", F.Fix},
          {"site_id", F.SiteId},      {"expression", F.Expression},
          {"risk", F.Risk},           {"precision", F.Precision},
          {"aten_ops", F.AtenOps},    {"notes", Notes},
          {"fixits", FixIts}};
}

nlohmann::json sitesDocument(const std::vector<Finding> &Findings, const std::string &GeneratedBy) {
  nlohmann::json Sites = nlohmann::json::array();
  for (const auto &F : Findings)
    Sites.push_back({{"id", F.SiteId},
                     {"check", F.Check},
                     {"severity", F.Severity},
                     {"file", F.Where.File},
                     {"line", F.Where.Line},
                     {"column", F.Where.Column},
                     {"function", F.Function},
                     {"expression", F.Expression},
                     {"aten_ops", F.AtenOps},
                     {"risk", F.Risk},
                     {"precision", F.Precision},
                     {"message", F.Message},
                     {"fix", F.Fix}});
  return {{"schema_version", 1}, {"generated_by", GeneratedBy}, {"sites", Sites}};
}

} // namespace mpnanny::check

//===--- Pages.cpp - mpnanny-check -----------------------------------------===//
#include "Pages.h"

#include "KnowledgeBase.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cstdlib>

namespace mpnanny::check {

std::string knowledgeDir() {
  if (const char *Env = std::getenv("MPNANNY_KNOWLEDGE"); Env && *Env)
    return Env;
  if (std::string Installed = kb::installedDataDirectory("knowledge"); !Installed.empty())
    return Installed;
  if (llvm::sys::fs::is_directory(MPNANNY_KNOWLEDGE_DIR))
    return MPNANNY_KNOWLEDGE_DIR;
  if (llvm::sys::fs::is_directory(MPNANNY_INSTALLED_KNOWLEDGE_DIR))
    return MPNANNY_INSTALLED_KNOWLEDGE_DIR;
  return MPNANNY_KNOWLEDGE_DIR;
}

std::optional<std::string> pageOf(const std::string &Check) {
  llvm::StringRef Name(Check);
  for (const std::string &File :
       {Name.starts_with("mpnanny-") ? Check : "mpnanny-" + Check, Check}) {
    if (File.find('/') != std::string::npos)
      continue;
    if (auto Buffer = llvm::MemoryBuffer::getFile(knowledgeDir() + "/" + File + ".md"))
      return (*Buffer)->getBuffer().str();
  }
  return std::nullopt;
}

std::string summaryOf(const std::string &Page) {
  llvm::SmallVector<llvm::StringRef, 32> Lines;
  llvm::StringRef(Page).split(Lines, '\n');
  for (llvm::StringRef L : Lines) {
    L = L.trim();
    if (L.empty() || L.starts_with("#") || L.starts_with("<!--"))
      continue;
    return L.str();
  }
  return "";
}

std::string sectionOf(const std::string &Page, const std::string &Heading) {
  llvm::SmallVector<llvm::StringRef, 64> Lines;
  llvm::StringRef(Page).split(Lines, '\n');
  std::string Out;
  bool In = false, InCode = false;
  for (llvm::StringRef L : Lines) {
    if (L.starts_with("```"))
      InCode = !InCode;
    if (!InCode && L.starts_with("## ")) {
      if (In)
        break;
      In = L.drop_front(3).trim() == Heading;
      continue;
    }
    if (In)
      Out += L.str() + "\n";
  }
  return llvm::StringRef(Out).trim().str();
}

} // namespace mpnanny::check

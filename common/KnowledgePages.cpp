//===--- KnowledgePages.cpp - mpnanny --------------------------------------===//
#include "KnowledgePages.h"

#include "KnowledgeBase.h" // installedDataDirectory
#include "Vocabulary.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef MPNANNY_KNOWLEDGE_DIR
#define MPNANNY_KNOWLEDGE_DIR ""
#endif
#ifndef MPNANNY_INSTALLED_KNOWLEDGE_DIR
#define MPNANNY_INSTALLED_KNOWLEDGE_DIR ""
#endif

namespace fs = std::filesystem;

namespace mpnanny::knowledge {

namespace {

const char *const PageExtension = ".md";

bool startsWith(const std::string &Text, std::string_view Prefix) {
  return Text.compare(0, Prefix.size(), Prefix) == 0;
}

/// What LLVM's StringRef::trim() takes off both ends, so that pages read as they always have.
std::string trimmed(const std::string &Text) {
  const char *const Space = " \t\n\v\f\r";
  const size_t First = Text.find_first_not_of(Space);
  if (First == std::string::npos)
    return "";
  return Text.substr(First, Text.find_last_not_of(Space) - First + 1);
}

std::vector<std::string> linesOf(const std::string &Text) {
  std::vector<std::string> Lines;
  size_t Start = 0;
  for (size_t End; (End = Text.find('\n', Start)) != std::string::npos; Start = End + 1)
    Lines.push_back(Text.substr(Start, End - Start));
  Lines.push_back(Text.substr(Start));
  return Lines;
}

std::optional<std::string> readWhole(const std::string &File) {
  std::error_code EC;
  if (!fs::is_regular_file(File, EC))
    return std::nullopt;
  std::ifstream In(File, std::ios::binary);
  if (!In)
    return std::nullopt;
  std::ostringstream Text;
  Text << In.rdbuf();
  return Text.str();
}

} // namespace

std::string directory() {
  if (const char *Env = std::getenv("MPNANNY_KNOWLEDGE"); Env && *Env)
    return Env;
  if (std::string Installed = kb::installedDataDirectory("knowledge"); !Installed.empty())
    return Installed;
  std::error_code EC;
  if (fs::is_directory(MPNANNY_KNOWLEDGE_DIR, EC))
    return MPNANNY_KNOWLEDGE_DIR;
  if (fs::is_directory(MPNANNY_INSTALLED_KNOWLEDGE_DIR, EC))
    return MPNANNY_INSTALLED_KNOWLEDGE_DIR;
  return MPNANNY_KNOWLEDGE_DIR;
}

std::vector<Page> pages() {
  std::vector<Page> Out;
  std::error_code EC;
  for (fs::directory_iterator It(directory(), EC), End; It != End && !EC; It.increment(EC)) {
    const std::string Name = It->path().filename().string();
    if (Name.size() < 3 || Name.compare(Name.size() - 3, 3, PageExtension) != 0 ||
        Name == "README.md")
      continue;
    Out.push_back({Name.substr(0, Name.size() - 3), It->path().string()});
  }
  std::sort(Out.begin(), Out.end(), [](const Page &A, const Page &B) { return A.Name < B.Name; });
  return Out;
}

std::optional<Page> findPage(const std::string &Name) {
  const std::string AlertPrefix(vocab::alertPagePrefix());
  const std::vector<Page> All = pages();
  for (const std::string &Candidate : {Name, std::string(vocab::checkPrefix()) + Name,
                                       AlertPrefix + Name, AlertPrefix + vocab::upperCase(Name)})
    for (const Page &P : All)
      if (P.Name == Candidate)
        return P;
  return std::nullopt;
}

std::optional<std::string> checkPage(const std::string &Check) {
  const std::string Prefixed =
      startsWith(Check, vocab::checkPrefix()) ? Check : std::string(vocab::checkPrefix()) + Check;
  for (const std::string &Name : {Prefixed, Check}) {
    if (Name.find('/') != std::string::npos)
      continue;
    if (auto Text = readWhole(directory() + "/" + Name + PageExtension))
      return Text;
  }
  return std::nullopt;
}

std::string summaryOf(const std::string &Page) {
  for (const std::string &Line : linesOf(Page)) {
    const std::string L = trimmed(Line);
    if (L.empty() || startsWith(L, "#") || startsWith(L, "<!--"))
      continue;
    return L;
  }
  return "";
}

std::string sectionOf(const std::string &Page, const std::string &Heading) {
  std::string Out;
  bool In = false, InCode = false;
  for (const std::string &Line : linesOf(Page)) {
    if (startsWith(Line, "```"))
      InCode = !InCode;
    if (!InCode && startsWith(Line, "## ")) {
      if (In)
        break;
      In = trimmed(Line.substr(3)) == Heading;
      continue;
    }
    if (In)
      Out += Line + "\n";
  }
  return trimmed(Out);
}

std::string titleOf(const std::string &Page, const std::string &Fallback) {
  for (const std::string &Line : linesOf(Page))
    if (startsWith(Line, "# "))
      return trimmed(Line.substr(2));
  return Fallback;
}

} // namespace mpnanny::knowledge

//===--- LlvmCompat.h - mpnanny ----------------------------------*- C++ -*-===//
//
// Where the clang API the checks use differs between LLVM 16 and 19, one spelling for all.
// FileEntry::getName() is gone in LLVM 19 (a FileEntryRef names a file), and
// SourceManager's file table is keyed by `const FileEntry *` up to LLVM 17 and by
// FileEntryRef from 18 on; CompilerInvocation::getLangOpts() gives a pointer in 16 and a
// reference in 19. The helpers pick by type, not by version number, so 17 and 18 fit too.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_UTILS_LLVMCOMPAT_H
#define MPNANNY_CHECKS_UTILS_LLVMCOMPAT_H

#include "clang/Basic/FileEntry.h"
#include "clang/Basic/LangOptions.h"
#include "clang/Basic/SourceManager.h"
#include <optional>
#include <string>
#include <type_traits>

namespace clang::tidy::mpnanny {

/// A file's real path, or the name it was opened by when it has none. Takes what
/// SourceManager::fileinfo_begin() yields as its key: a `const FileEntry *` or a FileEntryRef.
template <typename FileKey> std::string realPathOrName(const FileKey &File) {
  if constexpr (std::is_pointer_v<FileKey>) {
    llvm::StringRef Real = File->tryGetRealPathName();
    return (Real.empty() ? File->getName() : Real).str();
  } else {
    llvm::StringRef Real = File.getFileEntry().tryGetRealPathName();
    return (Real.empty() ? File.getName() : Real).str();
  }
}

/// The name the main file was opened by, or nothing (a buffer without a file).
inline std::optional<std::string> mainFileName(const SourceManager &SM) {
  if (OptionalFileEntryRef Main = SM.getFileEntryRefForID(SM.getMainFileID()))
    return Main->getName().str();
  return std::nullopt;
}

/// The language options of a CompilerInvocation (a template, so that this header needs no
/// Frontend header).
template <typename Invocation> LangOptions &langOptionsOf(Invocation &CI) {
  if constexpr (std::is_pointer_v<decltype(CI.getLangOpts())>)
    return *CI.getLangOpts();
  else
    return CI.getLangOpts();
}

} // namespace clang::tidy::mpnanny

#endif

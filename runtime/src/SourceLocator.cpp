#include "SourceLocator.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace mpnanny {
namespace {

char* debuginfo_search_path = nullptr;
const Dwfl_Callbacks kProcessCallbacks = {
    dwfl_linux_proc_find_elf,
    dwfl_standard_find_debuginfo,
    nullptr,
    &debuginfo_search_path,
};

std::string demangle(const char* name) {
  if (!name) return {};
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !demangled) return name;
  std::string result = demangled;
  std::free(demangled);
  return result;
}

std::string die_function_name(Dwarf_Die* die) {
  Dwarf_Attribute attribute;
  // dwarf_attr_integrate follows DW_AT_abstract_origin and DW_AT_specification, so inlined
  // copies and out-of-line member definitions find the declaration's names.
  for (int name_attribute : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
    if (dwarf_attr_integrate(die, name_attribute, &attribute)) {
      if (const char* linkage = dwarf_formstring(&attribute)) return demangle(linkage);
    }
  }
  if (dwarf_attr_integrate(die, DW_AT_name, &attribute)) {
    if (const char* name = dwarf_formstring(&attribute)) return name;
  }
  return {};
}

std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

bool SourceLocator::is_library_source(const std::string& file) {
  // LibTorch's own folder names (installed headers, or a PyTorch source tree's paths), and the
  // system's and the compiler's header roots; never a bare folder name a user's project may
  // have too (ext/, bits/, src/): a match there moved a user's op to its caller's line.
  static const std::array<const char*, 9> kLibraryPaths = {"/ATen/",          "/c10/",     "/torch/csrc/",
                                                           "/include/torch/", "/caffe2/",  "/include/c++/",
                                                           "/usr/include/",   "/lib/gcc/", "/include/mpnanny/"};
  for (const char* fragment : kLibraryPaths) {
    if (file.find(fragment) != std::string::npos) return true;
  }
  return false;
}

bool SourceLocator::is_library_function(const std::string& demangled) {
  // The qualified name: what precedes the parameter list, less a template's return type (GCC
  // demangles "at::Tensor torch::nn::AnyModuleHolder<...>::forward(...)").
  int depth = 0;
  size_t name_start = 0, name_end = demangled.size();
  constexpr std::string_view kAnonymous = "(anonymous namespace)";
  for (size_t i = 0; i < demangled.size(); ++i) {
    if (demangled.compare(i, kAnonymous.size(), kAnonymous) == 0) {
      i += kAnonymous.size() - 1;
      continue;
    }
    const char c = demangled[i];
    if (c == '<' || c == '{' || c == '[') ++depth;
    if ((c == '>' || c == '}' || c == ']') && depth > 0) --depth;
    if (depth != 0) continue;
    if (c == ' ') name_start = i + 1;
    if (c == '(') {
      name_end = i;
      break;
    }
  }
  const std::string name = demangled.substr(name_start, name_end - name_start);
  static const std::array<const char*, 7> kLibraryNamespaces = {
      "at::", "c10::", "torch::", "caffe2::", "std::", "__gnu_cxx::", "mpnanny::"};
  for (const char* prefix : kLibraryNamespaces) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

bool SourceLocator::is_library_module(const std::string& path) {
  // By the library's own name, its part before ".so" and any "-<version>" (libc-2.31.so): a
  // prefix would take a user's libtorch_myops.so or libc10_extensions.so for LibTorch's.
  static const std::array<const char*, 22> kLibraryNames = {"libtorch",
                                                            "libtorch_cpu",
                                                            "libtorch_cuda",
                                                            "libtorch_cuda_cpp",
                                                            "libtorch_cuda_cu",
                                                            "libtorch_cuda_linalg",
                                                            "libtorch_global_deps",
                                                            "libtorch_python",
                                                            "libc10",
                                                            "libc10_cuda",
                                                            "libshm",
                                                            "libmpnanny_runtime",
                                                            "libc",
                                                            "libm",
                                                            "libstdc++",
                                                            "libgcc_s",
                                                            "libgomp",
                                                            "libpthread",
                                                            "libdw",
                                                            "libsqlite3",
                                                            "libtorchvision",
                                                            "libtorchaudio"};
  // Caffe2's operator libraries (libcaffe2_observers.so, ...) and the dynamic loader by prefix.
  const std::string name = basename_of(path);
  if (name.rfind("ld-linux", 0) == 0 || name.rfind("libcaffe2", 0) == 0) return true;
  std::string stem = name.substr(0, name.find(".so"));
  if (const auto dash = stem.find('-');
      dash != std::string::npos && dash + 1 < stem.size() && std::isdigit(static_cast<unsigned char>(stem[dash + 1]))) {
    stem.resize(dash);
  }
  return std::find(kLibraryNames.begin(), kLibraryNames.end(), stem) != kLibraryNames.end();
}

SourceLocator::SourceLocator() {
  // The first unwind sets up the unwinder's caches; do it here rather than inside an op callback.
  void* frame = nullptr;
  unw_backtrace(&frame, 1);
  dwfl_ = dwfl_begin(&kProcessCallbacks);
}

SourceLocator::~SourceLocator() {
  if (dwfl_) dwfl_end(dwfl_);
}

const SourceLocation* SourceLocator::locate_caller() {
  // libunwind's unw_backtrace rather than libgcc's _Unwind_Backtrace: libgcc decodes each frame's
  // unwind rules again on every call (about 0.6 us a frame here), libunwind keeps them per
  // return address, so a whole stack costs well under a microsecond once seen.
  constexpr int kMaxFrames = 64;
  void* frames[kMaxFrames];
  const int count = unw_backtrace(frames, kMaxFrames);
  std::lock_guard<std::mutex> lock(mutex_);
  for (int i = 1; i < count; ++i) {  // frame 0 is this function
    const auto address = reinterpret_cast<uintptr_t>(frames[i]);
    auto found = cache_.find(address);
    if (found == cache_.end()) found = cache_.emplace(address, symbolize(address)).first;
    if (found->second.user) return &found->second.location;
  }
  return nullptr;
}

SourceLocator::Verdict SourceLocator::symbolize(uintptr_t return_address) {
  Verdict verdict;
  if (!dwfl_ || return_address == 0) return verdict;
  // A return address points after the call; the call itself is one byte earlier.
  const Dwarf_Addr pc = return_address - 1;
  Dwfl_Module* module = dwfl_addrmodule(dwfl_, pc);
  if (!module) {
    // Libraries loaded after the last report (dlopen) are picked up by reporting again.
    dwfl_report_begin(dwfl_);
    dwfl_linux_proc_report(dwfl_, getpid());
    dwfl_report_end(dwfl_, nullptr, nullptr);
    reported_ = true;
    module = dwfl_addrmodule(dwfl_, pc);
    if (!module) return verdict;
  }
  const char* module_name = dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  if (module_name && is_library_module(module_name)) return verdict;

  Dwarf_Addr bias = 0;
  Dwarf_Die* compile_unit = dwfl_module_addrdie(module, pc, &bias);
  if (!compile_unit) {
    // No debug information: the symbol name is all there is. LibTorch's header code instantiated
    // or not inlined in the user's binary (at::exp, AnyModuleHolder<...>::forward) is not the
    // user's frame, nor is a frame of a stripped binary, which has no name to show: the walk goes
    // on to the frame that called it (the user's code in a library with debug information calls
    // the executable's copy of at::exp).
    const std::string function = demangle(dwfl_module_addrname(module, pc));
    if (function.empty() || is_library_function(function)) return verdict;
    verdict.user = true;
    verdict.location.function = function;
    return verdict;
  }
  std::string file;
  int line = 0;
  if (Dwfl_Line* line_entry = dwfl_module_getsrc(module, pc)) {
    const char* source = dwfl_lineinfo(line_entry, nullptr, &line, nullptr, nullptr, nullptr);
    if (source) file = source;
  }
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  dwarf_getsrcfiles(compile_unit, &files, &file_count);

  // Walk the inlined-call chain from the innermost scope outwards: code inlined from a LibTorch
  // header into the user's function keeps the user's call line in DW_AT_call_file/line.
  // dwarf_getscopes continues from an inlined subroutine into its abstract definition's scopes;
  // the physical chain (what it was inlined into) comes from dwarf_getscopes_die on the
  // innermost scope, as eu-addr2line -i does.
  Dwarf_Die* scopes = nullptr;
  int scope_count = dwarf_getscopes(compile_unit, pc - bias, &scopes);
  if (scope_count > 0) {
    Dwarf_Die innermost = scopes[0];
    std::free(scopes);
    scopes = nullptr;
    scope_count = dwarf_getscopes_die(&innermost, &scopes);
  }
  bool saw_function = false;
  for (int i = 0; i < scope_count; ++i) {
    const int tag = dwarf_tag(&scopes[i]);
    if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) continue;
    saw_function = true;
    if (!file.empty() && !is_library_source(file)) {
      verdict.user = true;
      verdict.location = {die_function_name(&scopes[i]), file, line};
      break;
    }
    if (tag == DW_TAG_subprogram) break;
    Dwarf_Attribute attribute;
    Dwarf_Word value = 0;
    if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attribute), &value) == 0 && files) {
      const char* call_file = dwarf_filesrc(files, value, nullptr, nullptr);
      file = call_file ? call_file : "";
    }
    if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attribute), &value) == 0) {
      line = static_cast<int>(value);
    }
  }
  std::free(scopes);
  if (!saw_function && !file.empty() && !is_library_source(file)) {
    verdict.user = true;
    verdict.location = {demangle(dwfl_module_addrname(module, pc)), file, line};
  }
  return verdict;
}

}  // namespace mpnanny

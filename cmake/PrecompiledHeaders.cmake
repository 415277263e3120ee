# Precompiled headers and unity batches: most of a first build was parsing the same headers
# again in every file (LibTorch's <torch/torch.h> took 40-50 s of each runtime and test file,
# Clang's AST matchers about half of each check), so each big target parses them once.
# Build-time only: the objects, and so what is installed, are the same code.
#
#   -DMPNANNY_PRECOMPILE_HEADERS=OFF   parse every header in every file again (a compiler or
#                                      tool that reads the compile commands and cannot use
#                                      GCC's .gch files; mpnanny-check itself can)
option(MPNANNY_PRECOMPILE_HEADERS "Precompile LibTorch's and Clang's headers (faster builds)" ON)

# The LibTorch headers the runtime's files, its tests and benchmarks include between them (the
# same paths in LibTorch 1.13 and 2.x). Only C++ sources: a CUDA LibTorch adds .cu files.
set(MPNANNY_TORCH_PCH_HEADERS
  "$<$<COMPILE_LANGUAGE:CXX>:<torch/torch.h$<ANGLE-R>>"
  "$<$<COMPILE_LANGUAGE:CXX>:<ATen/record_function.h$<ANGLE-R>>"
  "$<$<COMPILE_LANGUAGE:CXX>:<torch/csrc/autograd/engine.h$<ANGLE-R>>")

# What the checks, the scanner and the MCP server include from Clang and LLVM.
set(MPNANNY_CLANG_PCH_HEADERS
  "$<$<COMPILE_LANGUAGE:CXX>:<clang-tidy/ClangTidyCheck.h$<ANGLE-R>>"
  "$<$<COMPILE_LANGUAGE:CXX>:<clang/ASTMatchers/ASTMatchFinder.h$<ANGLE-R>>"
  "$<$<COMPILE_LANGUAGE:CXX>:<clang/ASTMatchers/ASTMatchers.h$<ANGLE-R>>"
  "$<$<COMPILE_LANGUAGE:CXX>:<clang/AST/ASTContext.h$<ANGLE-R>>"
  "$<$<COMPILE_LANGUAGE:CXX>:<clang/AST/ParentMapContext.h$<ANGLE-R>>"
  "$<$<COMPILE_LANGUAGE:CXX>:<clang/AST/RecursiveASTVisitor.h$<ANGLE-R>>"
  "$<$<COMPILE_LANGUAGE:CXX>:<clang/Lex/Lexer.h$<ANGLE-R>>"
  "$<$<COMPILE_LANGUAGE:CXX>:<llvm/Support/FileSystem.h$<ANGLE-R>>"
  "$<$<COMPILE_LANGUAGE:CXX>:<llvm/Support/raw_ostream.h$<ANGLE-R>>")

# mpnanny_precompile(TARGET torch|clang [REUSE_FROM OTHER]): TARGET's C++ files start from the
# precompiled set, its own or OTHER's. GCC takes a precompiled header only where it was made with
# the same position-independence (-fPIC), so a target that reuses another's is made PIC like it.
function(mpnanny_precompile target set)
  if(NOT MPNANNY_PRECOMPILE_HEADERS)
    return()
  endif()
  cmake_parse_arguments(PCH "" "REUSE_FROM" "" ${ARGN})
  if(PCH_REUSE_FROM)
    get_target_property(pic ${PCH_REUSE_FROM} POSITION_INDEPENDENT_CODE)
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE "${pic}")
    target_precompile_headers(${target} REUSE_FROM ${PCH_REUSE_FROM})
  elseif(set STREQUAL "torch")
    target_precompile_headers(${target} PRIVATE ${MPNANNY_TORCH_PCH_HEADERS})
  elseif(set STREQUAL "clang")
    target_precompile_headers(${target} PRIVATE ${MPNANNY_CLANG_PCH_HEADERS})
  else()
    message(FATAL_ERROR "mpnanny_precompile(${target} ${set}): the sets are torch and clang")
  endif()
endfunction()

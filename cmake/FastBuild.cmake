# Unity builds, and precompiled headers where they pay: most of a first build was the same
# headers and the same templates again in every file (Clang's AST matchers and LibTorch's
# headers parsed, instantiated and described in debug information once per file). A unity batch
# compiles several files of a target as one: six checks took 109 s one by one and 21 s as one
# batch (g++ 12, -O2 -g). Build-time only: the same code is compiled, so nothing installed
# changes. docs/install.md, "How long a build takes", has the measurements.
#
#   -DMPNANNY_UNITY_BUILD=OFF          one object per file (what an IDE's per-file tools prefer)
#   -DMPNANNY_PRECOMPILE_HEADERS=ON    also precompile LibTorch's and Clang's headers per target:
#                                      off by default, since with -g GCC's .gch files are 550 to
#                                      720 MB and loading one cost more than a unity batch saves
option(MPNANNY_UNITY_BUILD "Compile each big target in a few unity batches (faster builds)" ON)
option(MPNANNY_PRECOMPILE_HEADERS "Precompile LibTorch's and Clang's headers per target" OFF)

# The LibTorch headers the runtime's files, its tests and benchmarks include between them (the
# same paths in LibTorch 1.13 and 2.x). Only C++ sources: a CUDA LibTorch adds .cu files.
set(MPNANNY_TORCH_PCH_HEADERS
  "$<$<COMPILE_LANGUAGE:CXX>:<torch/torch.h$<ANGLE-R>>"
  "$<$<COMPILE_LANGUAGE:CXX>:<ATen/record_function.h$<ANGLE-R>>"
  "$<$<COMPILE_LANGUAGE:CXX>:<torch/csrc/autograd/engine.h$<ANGLE-R>>")

# What the checks and the scanner include from Clang and LLVM.
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

# mpnanny_fast_build(TARGET torch|clang|none [BATCH N] [REUSE_FROM OTHER]): TARGET's C++ files
# compile in unity batches of N (default 16; two batches keep both cores of a small machine busy
# on a big target), and, with MPNANNY_PRECOMPILE_HEADERS, start from the precompiled set, its own
# or OTHER's. GCC takes a precompiled header only where it was made with the same
# position-independence (-fPIC), so a target that reuses another's is made PIC like it.
function(mpnanny_fast_build target set)
  cmake_parse_arguments(FAST "" "BATCH;REUSE_FROM" "" ${ARGN})
  if(MPNANNY_UNITY_BUILD)
    if(NOT FAST_BATCH)
      set(FAST_BATCH 16)
    endif()
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${FAST_BATCH})
  endif()
  if(NOT MPNANNY_PRECOMPILE_HEADERS OR set STREQUAL "none")
    return()
  endif()
  if(FAST_REUSE_FROM)
    get_target_property(pic ${FAST_REUSE_FROM} POSITION_INDEPENDENT_CODE)
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE "${pic}")
    target_precompile_headers(${target} REUSE_FROM ${FAST_REUSE_FROM})
  elseif(set STREQUAL "torch")
    target_precompile_headers(${target} PRIVATE ${MPNANNY_TORCH_PCH_HEADERS})
  elseif(set STREQUAL "clang")
    target_precompile_headers(${target} PRIVATE ${MPNANNY_CLANG_PCH_HEADERS})
  else()
    message(FATAL_ERROR "mpnanny_fast_build(${target} ${set}): the sets are torch, clang and none")
  endif()
endfunction()

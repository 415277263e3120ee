// Mock of torch/extension.h: what an extension's kernels see (the ATen headers below), without
// pybind11 and Python.
#pragma once
#include <ATen/AccumulateType.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>
#include <torch/torch.h>

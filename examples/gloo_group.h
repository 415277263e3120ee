// A Gloo process group on LibTorch 1.13 and 2.x alike, for examples/train_ddp.cpp and the
// runtime's data-parallel tests (test/runtime/test_data_parallel.cpp).
#pragma once

#include <torch/version.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

/// A Gloo process group. LibTorch 2.x splits a group into the ProcessGroup and a Backend per
/// device (ProcessGroupGloo is a Backend there, set as the group's CPU backend); in 1.13
/// ProcessGroupGloo is the group itself.
inline c10::intrusive_ptr<c10d::ProcessGroup> gloo_group(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    const c10::intrusive_ptr<c10d::ProcessGroupGloo::Options>& options) {
#if TORCH_VERSION_MAJOR >= 2
  auto backend = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size);
  group->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  group->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, backend);
  return group;
#else
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
#endif
}

// CUB's block, warp and device primitives as kernels name them (CUB's documented API, cub::
// namespace); mpnanny stand-in (see ../host_defines.h): the class templates with their
// TempStorage and the member templates a kernel calls, declarations only.
#pragma once
#include "../cuda_runtime_api.h"
#include "../host_defines.h"

#define CUB_VERSION 101702
#define CUB_PTX_ARCH 0
#define CUB_WARP_THREADS(unused) 32
#define CUB_LOG_WARP_THREADS(unused) 5
#define CUB_SMEM_BANKS(unused) 32
#define CUB_LOG_SMEM_BANKS(unused) 5
#define CUB_MAX(a, b) (((b) > (a)) ? (b) : (a))
#define CUB_MIN(a, b) (((b) < (a)) ? (b) : (a))
#define CUB_QUOTIENT_CEILING(x, y) (((x) + (y)-1) / (y))
#define CUB_RUNTIME_FUNCTION __host__ __device__
#define CUB_NAMESPACE_BEGIN namespace cub {
#define CUB_NAMESPACE_END }
#define CUB_NS_PREFIX
#define CUB_NS_POSTFIX
#define CUB_NS_QUALIFIER ::cub
#define CUB_STDERR

namespace cub {
struct NullType {};

template <typename T> struct Uninitialized {
  __host__ __device__ T &Alias();
};

template <typename Key, typename Value> struct KeyValuePair {
  typedef Key K;
  typedef Value V;
  Key key;
  Value value;
  __host__ __device__ KeyValuePair() {}
  __host__ __device__ KeyValuePair(const Key &key, const Value &value) : key(key), value(value) {}
};

struct Sum {
  template <typename T> __host__ __device__ T operator()(const T &a, const T &b) const;
};
struct Max {
  template <typename T> __host__ __device__ T operator()(const T &a, const T &b) const;
};
struct Min {
  template <typename T> __host__ __device__ T operator()(const T &a, const T &b) const;
};
struct ArgMax {
  template <typename T, typename O>
  __host__ __device__ KeyValuePair<O, T> operator()(const KeyValuePair<O, T> &a,
                                                    const KeyValuePair<O, T> &b) const;
};
struct ArgMin {
  template <typename T, typename O>
  __host__ __device__ KeyValuePair<O, T> operator()(const KeyValuePair<O, T> &a,
                                                    const KeyValuePair<O, T> &b) const;
};
struct Equality {
  template <typename T> __host__ __device__ bool operator()(const T &a, const T &b) const;
};

enum BlockLoadAlgorithm {
  BLOCK_LOAD_DIRECT,
  BLOCK_LOAD_STRIPED,
  BLOCK_LOAD_VECTORIZE,
  BLOCK_LOAD_TRANSPOSE,
  BLOCK_LOAD_WARP_TRANSPOSE,
  BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED
};
enum BlockStoreAlgorithm {
  BLOCK_STORE_DIRECT,
  BLOCK_STORE_STRIPED,
  BLOCK_STORE_VECTORIZE,
  BLOCK_STORE_TRANSPOSE,
  BLOCK_STORE_WARP_TRANSPOSE,
  BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED
};
enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE, BLOCK_SCAN_WARP_SCANS };
enum BlockReduceAlgorithm {
  BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY,
  BLOCK_REDUCE_RAKING,
  BLOCK_REDUCE_WARP_REDUCTIONS
};
enum BlockHistogramAlgorithm { BLOCK_HISTO_SORT, BLOCK_HISTO_ATOMIC };

template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD,
          BlockLoadAlgorithm ALGORITHM = BLOCK_LOAD_DIRECT, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int PTX_ARCH = 0>
class BlockLoad {
public:
  struct TempStorage {};
  __device__ BlockLoad();
  __device__ BlockLoad(TempStorage &temp_storage);
  template <typename InputIteratorT>
  __device__ void Load(InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD]);
  template <typename InputIteratorT>
  __device__ void Load(InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items);
  template <typename InputIteratorT, typename DefaultT>
  __device__ void Load(InputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items,
                       DefaultT oob_default);
};

template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD,
          BlockStoreAlgorithm ALGORITHM = BLOCK_STORE_DIRECT, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int PTX_ARCH = 0>
class BlockStore {
public:
  struct TempStorage {};
  __device__ BlockStore();
  __device__ BlockStore(TempStorage &temp_storage);
  template <typename OutputIteratorT>
  __device__ void Store(OutputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD]);
  template <typename OutputIteratorT>
  __device__ void Store(OutputIteratorT block_itr, T (&items)[ITEMS_PER_THREAD], int valid_items);
};

template <typename T, int BLOCK_DIM_X, BlockScanAlgorithm ALGORITHM = BLOCK_SCAN_RAKING,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int PTX_ARCH = 0>
class BlockScan {
public:
  struct TempStorage {};
  __device__ BlockScan();
  __device__ BlockScan(TempStorage &temp_storage);
  template <typename... Args> __device__ void InclusiveSum(Args &&...args);
  template <typename... Args> __device__ void ExclusiveSum(Args &&...args);
  template <typename... Args> __device__ void InclusiveScan(Args &&...args);
  template <typename... Args> __device__ void ExclusiveScan(Args &&...args);
};

template <typename T, int BLOCK_DIM_X,
          BlockReduceAlgorithm ALGORITHM = BLOCK_REDUCE_WARP_REDUCTIONS, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int PTX_ARCH = 0>
class BlockReduce {
public:
  struct TempStorage {};
  __device__ BlockReduce();
  __device__ BlockReduce(TempStorage &temp_storage);
  template <typename ReductionOp> __device__ T Reduce(T input, ReductionOp reduction_op);
  template <typename ReductionOp>
  __device__ T Reduce(T input, ReductionOp reduction_op, int num_valid);
  template <int ITEMS_PER_THREAD, typename ReductionOp>
  __device__ T Reduce(T (&inputs)[ITEMS_PER_THREAD], ReductionOp reduction_op);
  __device__ T Sum(T input);
  __device__ T Sum(T input, int num_valid);
  template <int ITEMS_PER_THREAD> __device__ T Sum(T (&inputs)[ITEMS_PER_THREAD]);
};

template <typename KeyT, int BLOCK_DIM_X, int ITEMS_PER_THREAD, typename ValueT = NullType,
          int RADIX_BITS = 4, bool MEMOIZE_OUTER_SCAN = true,
          BlockScanAlgorithm INNER_SCAN_ALGORITHM = BLOCK_SCAN_WARP_SCANS, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int PTX_ARCH = 0>
class BlockRadixSort {
public:
  struct TempStorage {};
  __device__ BlockRadixSort();
  __device__ BlockRadixSort(TempStorage &temp_storage);
  template <typename... Args> __device__ void Sort(Args &&...args);
  template <typename... Args> __device__ void SortDescending(Args &&...args);
  template <typename... Args> __device__ void SortBlockedToStriped(Args &&...args);
};

template <typename T, int LOGICAL_WARP_THREADS = 32, int PTX_ARCH = 0> class WarpReduce {
public:
  struct TempStorage {};
  __device__ WarpReduce(TempStorage &temp_storage);
  __device__ T Sum(T input);
  __device__ T Sum(T input, int valid_items);
  template <typename ReductionOp> __device__ T Reduce(T input, ReductionOp reduction_op);
  template <typename ReductionOp>
  __device__ T Reduce(T input, ReductionOp reduction_op, int valid_items);
};

template <typename T, int LOGICAL_WARP_THREADS = 32, int PTX_ARCH = 0> class WarpScan {
public:
  struct TempStorage {};
  __device__ WarpScan(TempStorage &temp_storage);
  template <typename... Args> __device__ void InclusiveSum(Args &&...args);
  template <typename... Args> __device__ void ExclusiveSum(Args &&...args);
  template <typename... Args> __device__ void InclusiveScan(Args &&...args);
  template <typename... Args> __device__ void ExclusiveScan(Args &&...args);
};

// Device-wide algorithms: each call is (temp storage, its size, the operands..., stream).
#define __MPNANNY_CUB_DEVICE_CALL(Name)                                                            \
  template <typename... Args> static CUB_RUNTIME_FUNCTION cudaError_t Name(Args &&...args);
struct DeviceReduce {
  __MPNANNY_CUB_DEVICE_CALL(Reduce)
  __MPNANNY_CUB_DEVICE_CALL(Sum)
  __MPNANNY_CUB_DEVICE_CALL(Max)
  __MPNANNY_CUB_DEVICE_CALL(Min)
  __MPNANNY_CUB_DEVICE_CALL(ArgMax)
  __MPNANNY_CUB_DEVICE_CALL(ArgMin)
};
struct DeviceSegmentedReduce {
  __MPNANNY_CUB_DEVICE_CALL(Reduce)
  __MPNANNY_CUB_DEVICE_CALL(Sum)
  __MPNANNY_CUB_DEVICE_CALL(Max)
  __MPNANNY_CUB_DEVICE_CALL(Min)
};
struct DeviceScan {
  __MPNANNY_CUB_DEVICE_CALL(InclusiveSum)
  __MPNANNY_CUB_DEVICE_CALL(ExclusiveSum)
  __MPNANNY_CUB_DEVICE_CALL(InclusiveScan)
  __MPNANNY_CUB_DEVICE_CALL(ExclusiveScan)
  __MPNANNY_CUB_DEVICE_CALL(InclusiveSumByKey)
  __MPNANNY_CUB_DEVICE_CALL(ExclusiveSumByKey)
};
struct DeviceRadixSort {
  __MPNANNY_CUB_DEVICE_CALL(SortKeys)
  __MPNANNY_CUB_DEVICE_CALL(SortKeysDescending)
  __MPNANNY_CUB_DEVICE_CALL(SortPairs)
  __MPNANNY_CUB_DEVICE_CALL(SortPairsDescending)
};
struct DeviceSegmentedRadixSort {
  __MPNANNY_CUB_DEVICE_CALL(SortKeys)
  __MPNANNY_CUB_DEVICE_CALL(SortPairs)
  __MPNANNY_CUB_DEVICE_CALL(SortPairsDescending)
};
struct DeviceSelect {
  __MPNANNY_CUB_DEVICE_CALL(Flagged)
  __MPNANNY_CUB_DEVICE_CALL(If)
  __MPNANNY_CUB_DEVICE_CALL(Unique)
};
struct DeviceRunLengthEncode {
  __MPNANNY_CUB_DEVICE_CALL(Encode)
};
struct DeviceHistogram {
  __MPNANNY_CUB_DEVICE_CALL(HistogramEven)
};
#undef __MPNANNY_CUB_DEVICE_CALL

template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, bool WARP_TIME_SLICING = false,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int PTX_ARCH = 0>
class BlockExchange {
public:
  struct TempStorage {};
  __device__ BlockExchange();
  __device__ BlockExchange(TempStorage &temp_storage);
  template <typename... Args> __device__ void StripedToBlocked(Args &&...args);
  template <typename... Args> __device__ void BlockedToStriped(Args &&...args);
  template <typename... Args> __device__ void WarpStripedToBlocked(Args &&...args);
  template <typename... Args> __device__ void BlockedToWarpStriped(Args &&...args);
  template <typename... Args> __device__ void ScatterToBlocked(Args &&...args);
  template <typename... Args> __device__ void ScatterToStriped(Args &&...args);
};

// The utilities of CUB's own block algorithms that projects reuse to write theirs
// (util_ptx.cuh, util_type.cuh, block_raking_layout.cuh).
template <int N> struct Log2 {
  enum { VALUE = N <= 1 ? 0 : 1 + Log2<(N >> 1)>::VALUE };
};
template <> struct Log2<0> {
  enum { VALUE = 0 };
};
template <int N> struct PowerOfTwo {
  enum { VALUE = ((N & (N - 1)) == 0) };
};
__device__ int RowMajorTid(int block_dim_x, int block_dim_y, int block_dim_z);
__device__ unsigned int LaneId();
__device__ unsigned int WarpId();
template <int LOGICAL_WARP_THREADS> __host__ __device__ unsigned int WarpMask(unsigned int warp_id);
template <int LOGICAL_WARP_THREADS, typename T>
__device__ T ShuffleUp(T input, int src_offset, int first_thread, unsigned int member_mask);
template <int LOGICAL_WARP_THREADS, typename T>
__device__ T ShuffleDown(T input, int src_offset, int last_thread, unsigned int member_mask);
template <int LOGICAL_WARP_THREADS, typename T>
__device__ T ShuffleIndex(T input, int src_lane, unsigned int member_mask);
template <typename T> __host__ __device__ constexpr T DivideAndRoundUp(T n, T d) {
  return (n + d - 1) / d;
}

template <typename T, int BLOCK_THREADS, int PTX_ARCH = 0> struct BlockRakingLayout {
  enum {
    SHARED_ELEMENTS = BLOCK_THREADS,
    MAX_RAKING_THREADS = BLOCK_THREADS < 32 ? BLOCK_THREADS : 32,
    SEGMENT_LENGTH = (SHARED_ELEMENTS + MAX_RAKING_THREADS - 1) / MAX_RAKING_THREADS,
    RAKING_THREADS = (SHARED_ELEMENTS + SEGMENT_LENGTH - 1) / SEGMENT_LENGTH,
    HAS_CONFLICTS = 0,
    CONFLICT_DEGREE = 1,
    USE_SEGMENT_PADDING = 0,
    GRID_ELEMENTS = RAKING_THREADS * SEGMENT_LENGTH,
    UNGUARDED = (SHARED_ELEMENTS % RAKING_THREADS == 0),
  };
  struct TempStorage {
    T buff[GRID_ELEMENTS];
  };
  static __device__ T *PlacementPtr(TempStorage &temp_storage, unsigned int linear_tid);
  static __device__ T *RakingPtr(TempStorage &temp_storage, unsigned int linear_tid);
};

template <typename ValueType, typename OffsetT = ptrdiff_t> class CountingInputIterator {
public:
  __host__ __device__ CountingInputIterator(const ValueType &val);
  __host__ __device__ ValueType operator[](OffsetT n) const;
  __host__ __device__ ValueType operator*() const;
  __host__ __device__ CountingInputIterator operator+(OffsetT n) const;
};
} // namespace cub

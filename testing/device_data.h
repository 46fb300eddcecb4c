// Device buffers, random data and host copies for the tests and the benchmark.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "inorm/inorm.h"

namespace inorm::testing {

// Owns a cudaMalloc allocation; empty when size is 0.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  ~DeviceBuffer();
  Status allocate(std::size_t bytes);
  void* get() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// x = offset + scale * sample, sample ~ U[0,1) or N(0,1), rounded to dtype.
enum class Distribution { kUniform, kNormal };
struct DataSpec {
  Distribution distribution = Distribution::kUniform;
  double offset = 0.0;
  double scale = 1.0;
};
// Parses "rand" / "U[0,1)", "randn", "<a> + randn", "<a> + rand".
Status parse_data_spec(const std::string& text, DataSpec* spec);
std::string describe(const DataSpec& spec);

Status fill_random(void* data, DType dtype, int64_t count, const DataSpec& spec, uint64_t seed);

// Sets every byte to 0xFF: a NaN bit pattern that no arithmetic result carries in any dtype.
Status poison(void* data, std::size_t bytes);
// Whether an element (raw bytes of `dtype`) is the poison pattern.
bool is_poison(const unsigned char* element, DType dtype);

// Host copies converted to double; element i of the result is data[offset + i].
Status copy_to_host(const void* data, DType dtype, int64_t offset, int64_t count,
                    std::vector<double>* out);
// The elements of `slice` (of `slice_channels` consecutive channels, each of `channel_len`, in a
// tensor of `channels`: GroupNorm's group, or one channel) of a tensor of `layout`, channel after
// channel: a contiguous run in NCHW; in channels_last a strided 2-D copy of the slice's columns of
// its sample, reordered.
Status copy_slice_to_host(const void* data, DType dtype, Layout layout, int64_t channels, int64_t slice_channels,
                          int64_t channel_len, int64_t slice, std::vector<double>* out);
Status copy_raw_to_host(const void* data, std::size_t bytes, std::vector<unsigned char>* out);
Status copy_from_host(const std::vector<double>& values, DType dtype, void* data);
double element_to_double(const unsigned char* element, DType dtype);

// Waits for the device and returns the first error of the work before it, naming `what`: the
// error cudaDeviceSynchronize itself returns (a kernel's fault), else a launch error still pending.
// Either is read before anything else can reset or mask it.
Status synchronize(const char* what);

// Name of device 0, or an explanation of why there is none.
bool cuda_device_available(std::string* why);

}  // namespace inorm::testing

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <curand.h>

#include <cstring>
#include <sstream>
#include <utility>

#include "testing/device_data.h"

namespace inorm::testing {
namespace {

Status cuda_check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::Ok();
  return Status(StatusCode::kCudaError,
                std::string(what) + ": " + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")");
}

Status curand_check(curandStatus_t status, const char* what) {
  if (status == CURAND_STATUS_SUCCESS) return Status::Ok();
  return Status(StatusCode::kCudaError, std::string(what) + ": curand status " + std::to_string(status));
}

template <typename T>
__device__ T convert_from_double(double v);
template <>
__device__ float convert_from_double<float>(double v) { return static_cast<float>(v); }
template <>
__device__ double convert_from_double<double>(double v) { return v; }
template <>
__device__ __half convert_from_double<__half>(double v) { return __double2half(v); }
template <>
__device__ __nv_bfloat16 convert_from_double<__nv_bfloat16>(double v) { return __double2bfloat16(v); }

template <typename T>
__global__ void scale_and_convert(const float* samples, T* out, int64_t count, double offset, double scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = convert_from_double<T>(offset + scale * static_cast<double>(samples[i]));
  }
}

template <typename T>
void launch_convert(const float* samples, void* out, int64_t count, const DataSpec& spec) {
  scale_and_convert<T><<<4096, 256>>>(samples, static_cast<T*>(out), count, spec.offset, spec.scale);
}

}  // namespace

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(bytes_, other.bytes_);
  return *this;
}
DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}
Status DeviceBuffer::allocate(std::size_t bytes) {
  if (data_ != nullptr) {
    cudaFree(data_);
    data_ = nullptr;
    bytes_ = 0;
  }
  if (bytes == 0) return Status::Ok();
  Status status = cuda_check(cudaMalloc(&data_, bytes), "cudaMalloc");
  if (status.ok()) bytes_ = bytes;
  return status;
}

Status parse_data_spec(const std::string& text, DataSpec* spec) {
  std::string rest = text;
  rest.erase(0, rest.find_first_not_of(' '));
  rest.erase(rest.find_last_not_of(' ') + 1);
  DataSpec parsed;
  const std::size_t plus = rest.find('+');
  if (plus != std::string::npos) {
    try {
      std::size_t used = 0;
      const std::string number = rest.substr(0, plus);
      parsed.offset = std::stod(number, &used);
      if (number.find_first_not_of(' ', used) != std::string::npos) throw std::invalid_argument(number);
    } catch (const std::exception&) {
      return Status(StatusCode::kInvalidArgument, "data: cannot read the offset in '" + text + "'");
    }
    rest = rest.substr(plus + 1);
    rest.erase(0, rest.find_first_not_of(' '));
  }
  if (rest == "randn") {
    parsed.distribution = Distribution::kNormal;
  } else if (rest == "rand" || rest == "U[0,1)") {
    parsed.distribution = Distribution::kUniform;
  } else {
    return Status(StatusCode::kInvalidArgument,
                  "data: expected 'rand', 'randn' or '<offset> + randn', got '" + text + "'");
  }
  *spec = parsed;
  return Status::Ok();
}

std::string describe(const DataSpec& spec) {
  std::ostringstream out;
  if (spec.offset != 0) out << spec.offset << " + ";
  if (spec.scale != 1) out << spec.scale << " * ";
  out << (spec.distribution == Distribution::kNormal ? "randn" : "U[0,1)");
  return out.str();
}

Status fill_random(void* data, DType dtype, int64_t count, const DataSpec& spec, uint64_t seed) {
  if (count == 0) return Status::Ok();
  DeviceBuffer samples;
  // curandGenerateNormal needs an even count.
  Status status = samples.allocate(static_cast<std::size_t>(count + 1) * sizeof(float));
  if (!status.ok()) return status;
  curandGenerator_t generator = nullptr;
  status = curand_check(curandCreateGenerator(&generator, CURAND_RNG_PSEUDO_PHILOX4_32_10), "curandCreateGenerator");
  if (!status.ok()) return status;
  status = curand_check(curandSetPseudoRandomGeneratorSeed(generator, seed), "curandSetSeed");
  float* out = static_cast<float*>(samples.get());
  if (status.ok()) {
    status = spec.distribution == Distribution::kNormal
                 ? curand_check(curandGenerateNormal(generator, out, static_cast<std::size_t>((count + 1) / 2 * 2), 0.0f, 1.0f),
                                "curandGenerateNormal")
                 : curand_check(curandGenerateUniform(generator, out, static_cast<std::size_t>(count)),
                                "curandGenerateUniform");
  }
  curandDestroyGenerator(generator);
  if (!status.ok()) return status;
  switch (dtype) {
    case DType::kFloat32: launch_convert<float>(out, data, count, spec); break;
    case DType::kFloat64: launch_convert<double>(out, data, count, spec); break;
    case DType::kFloat16: launch_convert<__half>(out, data, count, spec); break;
    case DType::kBFloat16: launch_convert<__nv_bfloat16>(out, data, count, spec); break;
  }
  return synchronize("fill_random (scale_and_convert)");
}

Status poison(void* data, std::size_t bytes) {
  if (bytes == 0) return Status::Ok();
  Status status = cuda_check(cudaMemset(data, 0xFF, bytes), "cudaMemset(poison)");
  if (!status.ok()) return status;
  return synchronize("poison");
}

bool is_poison(const unsigned char* element, DType dtype) {
  for (std::size_t i = 0; i < dtype_size(dtype); ++i) {
    if (element[i] != 0xFF) return false;
  }
  return true;
}

double element_to_double(const unsigned char* element, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: {
      float v;
      std::memcpy(&v, element, sizeof(v));
      return v;
    }
    case DType::kFloat64: {
      double v;
      std::memcpy(&v, element, sizeof(v));
      return v;
    }
    case DType::kFloat16: {
      __half v;
      std::memcpy(&v, element, sizeof(v));
      return static_cast<double>(__half2float(v));
    }
    case DType::kBFloat16: {
      __nv_bfloat16 v;
      std::memcpy(&v, element, sizeof(v));
      return static_cast<double>(__bfloat162float(v));
    }
  }
  return 0.0;
}

Status copy_raw_to_host(const void* data, std::size_t bytes, std::vector<unsigned char>* out) {
  out->resize(bytes);
  if (bytes == 0) return Status::Ok();
  return cuda_check(cudaMemcpy(out->data(), data, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(D2H)");
}

Status copy_to_host(const void* data, DType dtype, int64_t offset, int64_t count,
                    std::vector<double>* out) {
  const std::size_t elem = dtype_size(dtype);
  std::vector<unsigned char> raw;
  Status status = copy_raw_to_host(static_cast<const unsigned char*>(data) + offset * elem,
                                   static_cast<std::size_t>(count) * elem, &raw);
  if (!status.ok()) return status;
  out->resize(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) (*out)[i] = element_to_double(raw.data() + i * elem, dtype);
  return Status::Ok();
}

Status copy_slice_to_host(const void* data, DType dtype, Layout layout, int64_t channels, int64_t slice_channels,
                          int64_t channel_len, int64_t slice, std::vector<double>* out) {
  const int64_t slice_len = slice_channels * channel_len;
  if (layout == Layout::kContiguous) return copy_to_host(data, dtype, slice * slice_len, slice_len, out);
  const std::size_t elem = dtype_size(dtype);
  const int64_t groups = channels / slice_channels;
  const int64_t first = (slice / groups * channel_len) * channels + slice % groups * slice_channels;
  const std::size_t row = static_cast<std::size_t>(slice_channels) * elem;  // the slice's channels at one position
  std::vector<unsigned char> raw(static_cast<std::size_t>(slice_len) * elem);
  const Status status = cuda_check(cudaMemcpy2D(raw.data(), row, static_cast<const unsigned char*>(data) + first * elem,
                                                static_cast<std::size_t>(channels) * elem, row,
                                                static_cast<std::size_t>(channel_len), cudaMemcpyDeviceToHost),
                                   "cudaMemcpy2D(D2H, one channels_last slice)");
  if (!status.ok()) return status;
  out->resize(static_cast<std::size_t>(slice_len));
  for (int64_t s = 0; s < channel_len; ++s) {
    for (int64_t c = 0; c < slice_channels; ++c) {
      (*out)[c * channel_len + s] = element_to_double(raw.data() + (s * slice_channels + c) * elem, dtype);
    }
  }
  return Status::Ok();
}

Status copy_from_host(const std::vector<double>& values, DType dtype, void* data) {
  const std::size_t elem = dtype_size(dtype);
  std::vector<unsigned char> raw(values.size() * elem);
  for (std::size_t i = 0; i < values.size(); ++i) {
    unsigned char* dst = raw.data() + i * elem;
    switch (dtype) {
      case DType::kFloat32: { const float v = static_cast<float>(values[i]); std::memcpy(dst, &v, elem); break; }
      case DType::kFloat64: std::memcpy(dst, &values[i], elem); break;
      case DType::kFloat16: { const __half v = __double2half(values[i]); std::memcpy(dst, &v, elem); break; }
      case DType::kBFloat16: { const __nv_bfloat16 v = __double2bfloat16(values[i]); std::memcpy(dst, &v, elem); break; }
    }
  }
  if (raw.empty()) return Status::Ok();
  return cuda_check(cudaMemcpy(data, raw.data(), raw.size(), cudaMemcpyHostToDevice), "cudaMemcpy(H2D)");
}

Status synchronize(const char* what) {
  const cudaError_t synced = cudaDeviceSynchronize();
  const cudaError_t pending = cudaGetLastError();  // also clears a non-sticky launch error
  return cuda_check(synced != cudaSuccess ? synced : pending, what);
}

bool cuda_device_available(std::string* why) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    *why = std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(error) + ")";
    return false;
  }
  if (count == 0) {
    *why = "no CUDA device (cudaGetDeviceCount returned 0)";
    return false;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    *why = "cannot read the properties of device 0";
    return false;
  }
  *why = prop.name;
  return true;
}

}  // namespace inorm::testing

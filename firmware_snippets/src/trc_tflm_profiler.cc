// TensorFlow Lite Micro adapter (see trc_tflm_profiler.h).
#include "trc_tflm_profiler.h"

namespace trc {

namespace {

// Vela replaces each NPU subgraph by one custom operator registered as "ethos-u".
bool IsNpuTag(const char* tag) {
  static const char kNpu[] = "ethos-u";
  if (tag == nullptr) {
    return false;
  }
  for (unsigned i = 0; i < sizeof(kNpu); ++i) {
    if (tag[i] != kNpu[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

uint32_t TflmProfiler::BeginEvent(const char* tag) {
  if (depth_++ != 0) {
    return kNestedHandle;
  }
  const uint32_t index = trc_next_layer_index();
  const uint32_t engine = IsNpuTag(tag) ? TRC_ENGINE_NPU : TRC_ENGINE_CPU;
  trc_layer_info_once(index, engine, tag, nullptr);
  trc_layer_begin(index, engine);
  return index;
}

void TflmProfiler::EndEvent(uint32_t event_handle) {
  if (depth_ != 0) {
    --depth_;
  }
  if (event_handle == kNestedHandle) {
    return;
  }
  trc_layer_end(event_handle);
}

}  // namespace trc

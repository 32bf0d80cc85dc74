// Drives trc::TflmProfiler the way TFLM's interpreter does: through a MicroProfilerInterface
// pointer, BeginEvent(tag) before and EndEvent(handle) after each operator, with a nested
// event (an operator inside a control-flow subgraph). Usage: tflm_harness OUT.bin
#include <cstdio>
#include <cstring>

#include "tensorflow/lite/micro/micro_profiler_interface.h"
#include "trc.h"
#include "trc_tflm_profiler.h"

namespace {

unsigned char g_out[1 << 15];
size_t g_len = 0;
uint32_t g_clock = 1000;

int Capture(void*, const uint8_t* bytes, uint32_t length) {
  std::memcpy(&g_out[g_len], bytes, length);
  g_len += length;
  return 0;
}

uint32_t Now() { return g_clock += 10; }

void Invoke(tflite::MicroProfilerInterface* profiler) {
  static const char* const kOps[] = {"CONV_2D", "ethos-u", "WHILE", "SOFTMAX"};
  for (const char* op : kOps) {
    const uint32_t handle = profiler->BeginEvent(op);
    if (std::strcmp(op, "WHILE") == 0) {
      const uint32_t inner = profiler->BeginEvent("ADD");  // runs inside the WHILE subgraph
      profiler->EndEvent(inner);
    }
    profiler->EndEvent(handle);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    return 2;
  }
  trc_use_writer(Capture, nullptr);
  trc_set_time(Now, nullptr, 100000000u, TRC_TIME_USER);
  static trc::TflmProfiler profiler;
  for (int i = 0; i < 2; ++i) {
    trc_inference_begin();
    Invoke(&profiler);
    trc_inference_end(0);
  }
  FILE* out = std::fopen(argv[1], "wb");
  if (out == nullptr || std::fwrite(g_out, 1, g_len, out) != g_len || std::fclose(out) != 0) {
    return 1;
  }
  return 0;
}

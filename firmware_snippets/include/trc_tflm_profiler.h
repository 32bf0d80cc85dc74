/*
 * TensorFlow Lite Micro adapter: a MicroProfilerInterface that turns every operator the
 * interpreter runs into a layer begin/end record, so an unmodified interpreter emits one layer
 * per operator.
 *
 *   static trc::TflmProfiler profiler;
 *   tflite::MicroInterpreter interpreter(model, resolver, arena, kArenaSize,
 *                                        nullptr, &profiler);
 *   ...
 *   trc_arena(interpreter.arena_used_bytes(), kArenaSize);
 *   trc_inference_begin();
 *   interpreter.Invoke();
 *   trc_inference_end(status);
 *
 * Layer i of an inference is the i-th operator invoked; its op is the tag TFLM passes
 * ("CONV_2D", "DEPTHWISE_CONV_2D", ... or "ethos-u" for a Vela-compiled NPU subgraph, which is
 * marked engine NPU). The op is described once per layer index (trc_layer_info_once).
 * Operators inside control-flow subgraphs (IF, WHILE, CALL_ONCE) are counted in their parent
 * operator's span: nested events are not emitted.
 */
#ifndef TRC_TFLM_PROFILER_H
#define TRC_TFLM_PROFILER_H

#include <stdint.h>

#include "tensorflow/lite/micro/micro_profiler_interface.h"
#include "trc.h"

namespace trc {

class TflmProfiler : public tflite::MicroProfilerInterface {
 public:
  TflmProfiler() : depth_(0) {}
  ~TflmProfiler() override {}

  uint32_t BeginEvent(const char* tag) override;
  void EndEvent(uint32_t event_handle) override;

  // Handle returned for a nested event (not emitted).
  static const uint32_t kNestedHandle = 0x80000000u;

 private:
  uint32_t depth_;
};

}  // namespace trc

#endif  // TRC_TFLM_PROFILER_H

// RUN: %python %inputs/driver/expect_exit.py 1 %mpnanny_check --format=json --checks='-*,mpnanny-fp16-constant-range' %s -- %check_flags > %t.json
// RUN: %python %inputs/driver/fields.py %t.json | FileCheck %s
// RUN: FileCheck %s --check-prefix=RAW < %t.json

// --format=json: one object per finding with check, severity, file, line, column,
// function, message, fix, site id (and expression, risk, precision, ATen ops, notes).
#include <torch/torch.h>

namespace model {
torch::Tensor mask_scores(torch::Tensor scores, torch::Tensor mask) {
  auto h = scores.to(torch::kHalf);
  return h.masked_fill(mask, -1e9);
}
} // namespace model

torch::Tensor fp32_scores(torch::Tensor scores, torch::Tensor mask) {
  return scores.masked_fill(mask, -1e9);
}

// CHECK: check=mpnanny-fp16-constant-range severity=warning file=/{{.*}}/output-json.cpp line=12 column=30 function=model::mask_scores message=Tensor::masked_fill fill value -1e9 cannot be represented in fp16{{.*}} fix={{.+}} site_id={{[0-9a-f]+}} expression=h.masked_fill(mask, -1e9) risk=overflow precision=fp16 aten_ops=aten::masked_fill{{.*}}
// CHECK-NOT: check=
// RAW: "notes": [
// RAW: "message": "fp16 context: {{.*}}"

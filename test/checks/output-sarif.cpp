// RUN: %python %inputs/driver/expect_exit.py 1 %mpnanny_check --format=sarif %s -- %check_flags > %t.sarif
// RUN: %python %inputs/driver/validate_sarif.py %sarif_schema %t.sarif | FileCheck %s --check-prefix=VALID
// RUN: FileCheck %s < %t.sarif
// A clean run is a valid log too, with the rules and no result.
// RUN: %python %inputs/driver/expect_exit.py 0 %mpnanny_check --format=sarif --checks='-*,mpnanny-risky-op' %s -- %check_flags -DNOTHING > %t.empty.sarif
// RUN: %python %inputs/driver/validate_sarif.py %sarif_schema %t.empty.sarif | FileCheck %s --check-prefix=EMPTY

// --format=sarif: SARIF 2.1.0 with the checks as rules (help from knowledge/), notes as
// related locations, the line hash and the site id as partial fingerprints.
#include <torch/torch.h>

#ifndef NOTHING
torch::Tensor mask_scores(torch::Tensor scores, torch::Tensor mask) {
  auto h = scores.to(torch::kHalf);
  return h.masked_fill(mask, -1e9);
}
#endif

// VALID: valid: 1 result(s), {{[0-9]+}} rule(s)
// EMPTY: valid: 0 result(s), 1 rule(s)

// CHECK: "$schema": "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
// CHECK: "originalUriBaseIds": {
// CHECK-NEXT: "%SRCROOT%": {
// CHECK-NEXT: "uri": "file:///
// CHECK: "results": [
// CHECK: "level": "warning"
// CHECK: "uri": "{{[^"]*}}output-sarif.cpp"
// CHECK: "startColumn": 30,
// CHECK-NEXT: "startLine": 15
// CHECK: "message": {
// CHECK-NEXT: "text": "Tensor::masked_fill fill value -1e9 cannot be represented in fp16
// CHECK: "partialFingerprints": {
// CHECK-NEXT: "mpnannyLineHash/v1": "{{[0-9a-f]+}}",
// CHECK-NEXT: "mpnannySiteId/v1": "{{[0-9a-f]+}}"
// CHECK: "relatedLocations": [
// CHECK: "text": "fp16 context: {{.*}}"
// CHECK: "ruleId": "mpnanny-fp16-constant-range",
// CHECK: "tool": {
// CHECK: "name": "mpnanny-check",
// CHECK: "rules": [
// CHECK: "defaultConfiguration": {
// CHECK-NEXT: "level": "warning"
// CHECK: "markdown": "# mpnanny-fp16-constant-range
// CHECK: "id": "mpnanny-fp16-constant-range",
// CHECK: "name": "Fp16ConstantRange",
// CHECK: "shortDescription": {
// CHECK-NEXT: "text": "Flags a literal that fp16 cannot hold
// CHECK: "version": "2.1.0"

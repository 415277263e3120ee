// --fix applies a check's exact fix-it through both doors, and with JSON output too;
// SARIF carries it as a fix. mpnanny-log-softmax offers one for log(softmax(x)).
// RUN: rm -rf %t && mkdir -p %t
// RUN: cp %s %t/check.cpp && cp %s %t/tidy.cpp && cp %s %t/json.cpp
// RUN: not %mpnanny_check --fix --checks='-*,mpnanny-log-softmax' %t/check.cpp -- %check_flags | FileCheck %s --check-prefix=TEXT
// RUN: FileCheck %s --check-prefix=CHECK-FIXES < %t/check.cpp
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-log-softmax' --fix %t/tidy.cpp -- %check_flags
// RUN: FileCheck %s --check-prefix=CHECK-FIXES < %t/tidy.cpp
// RUN: not %mpnanny_check --fix --format=json --checks='-*,mpnanny-log-softmax' %t/json.cpp -- %check_flags > %t/json.out
// RUN: FileCheck %s --check-prefix=CHECK-FIXES < %t/json.cpp
// RUN: FileCheck %s --check-prefix=JSON < %t/json.out
// RUN: not %mpnanny_check --format=sarif --checks='-*,mpnanny-log-softmax' %s -- %check_flags > %t/fix.sarif
// RUN: %python %inputs/driver/validate_sarif.py %sarif_schema %t/fix.sarif
// RUN: FileCheck %s --check-prefix=SARIF < %t/fix.sarif
// Without --fix the file is left alone.
// RUN: cp %s %t/nofix.cpp && not %mpnanny_check --checks='-*,mpnanny-log-softmax' %t/nofix.cpp -- %check_flags > /dev/null
// RUN: diff %s %t/nofix.cpp

#include <torch/torch.h>

torch::Tensor log_probs(torch::Tensor logits) {
  auto h = logits.to(torch::kHalf);
  return torch::log(torch::softmax(h, -1));
}

// TEXT: :23:10: warning: torch::log of torch::softmax probabilities {{.*}} [mpnanny-log-softmax]
// TEXT: note: FIX-IT applied suggested code changes
// CHECK-FIXES: {{^}}  return torch::log_softmax(h, -1);{{$}}
// JSON: "fixits": [
// JSON: "text": "torch::log_softmax(h, -1)"
// SARIF: "fixes": [
// SARIF: "artifactChanges": [
// SARIF: "replacements": [
// SARIF: "deletedRegion": {
// SARIF-NEXT: "endColumn": 43,
// SARIF-NEXT: "endLine": 23,
// SARIF-NEXT: "startColumn": 10,
// SARIF-NEXT: "startLine": 23
// SARIF: "insertedContent": {
// SARIF-NEXT: "text": "torch::log_softmax(h, -1)"

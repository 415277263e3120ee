// RUN: %mpnanny_check --checks='-*,mpnanny-autocast-cache' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-autocast-cache' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{4, 4};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

// Flow-Factory PR #186: autocast on once before the loop, never cleared.
void enabled_once(Net net, torch::optim::Adam &opt, torch::Tensor x, torch::Tensor y) {
  at::autocast::set_enabled(true);
  for (int step = 0; step < 1000; ++step) {
    opt.zero_grad();
    auto loss = torch::mse_loss(net(x), y);
    loss.backward();
    opt.step();
// CHECK: :[[@LINE-1]]:9: warning: torch::optim::Adam::step updates the weights while the autocast-fp16 weight cache survives{{.*}} [mpnanny-autocast-cache]
// CHECK: :[[@LINE-2]]:9: note: call at::autocast::clear_cache() after the step
// CHECK: :[[@LINE-8]]:3: note: autocast-fp16 context: autocast is enabled here
  }
  at::autocast::set_enabled(false);
}

// Leaving autocast every iteration does not clear the cache in C++.
void disabled_without_clear(Net net, mpnanny::GradScaler &scaler, torch::optim::SGD &opt,
                            torch::Tensor x, torch::Tensor y) {
  while (true) {
    at::autocast::set_enabled(true);
    auto loss = torch::mse_loss(net(x), y);
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    scaler.step(opt);
// CHECK: :[[@LINE-1]]:12: warning: mpnanny::GradScaler::step updates the weights while the autocast-fp16 weight cache survives{{.*}} [mpnanny-autocast-cache]
    scaler.update();
  }
}

// A guard that only flips the switch; and an SGD update by hand under NoGradGuard.
struct AutocastGuard {
  AutocastGuard() { at::autocast::set_enabled(true); }
  ~AutocastGuard() { at::autocast::set_enabled(false); }
};
void manual_update(Net net, torch::Tensor x, torch::Tensor y, double lr) {
  for (int step = 0; step < 10; ++step) {
    torch::Tensor loss;
    {
      AutocastGuard guard;
      loss = torch::mse_loss(net(x), y);
    }
    loss.backward();
    torch::NoGradGuard no_grad;
    for (auto &p : net->parameters())
      p.sub_(p.grad() * lr);
// CHECK: :[[@LINE-1]]:9: warning: Tensor::sub_ updates the weights while the autocast-fp16 weight cache survives{{.*}} [mpnanny-autocast-cache]
  }
}

// Straight-line: forward, step, forward again, with autocast on throughout.
void two_forwards(Net net, torch::optim::Adam &opt, torch::Tensor x, torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto first = torch::mse_loss(net(x), y);
  first.backward();
  opt.step();
// CHECK: :[[@LINE-1]]:7: warning: torch::optim::Adam::step updates the weights {{.*}} [mpnanny-autocast-cache]
  auto second = net(x);
  at::autocast::set_enabled(false);
}

// Safe: the cache is cleared every iteration.
void cleared_each_step(Net net, torch::optim::Adam &opt, torch::Tensor x, torch::Tensor y) {
  for (int step = 0; step < 1000; ++step) {
    at::autocast::set_enabled(true);
    auto loss = torch::mse_loss(net(x), y);
    at::autocast::set_enabled(false);
    at::autocast::clear_cache();
    loss.backward();
    opt.step();
  }
}

// Safe: a guard that clears on exit, as PyTorch's Python autocast does.
struct ClearingAutocastGuard {
  ClearingAutocastGuard() {
    at::autocast::increment_nesting();
    at::autocast::set_enabled(true);
  }
  ~ClearingAutocastGuard() {
    at::autocast::set_enabled(false);
    if (at::autocast::decrement_nesting() == 0)
      at::autocast::clear_cache();
  }
};
void guarded(Net net, torch::optim::Adam &opt, torch::Tensor x, torch::Tensor y) {
  for (int step = 0; step < 1000; ++step) {
    torch::Tensor loss;
    {
      ClearingAutocastGuard autocast;
      loss = torch::mse_loss(net(x), y);
    }
    loss.backward();
    opt.step();
  }
}

// Safe: cleared after the step, before the next forward; and no autocast at all.
void cleared_after_step(Net net, torch::optim::Adam &opt, torch::Tensor x, torch::Tensor y) {
  at::autocast::set_enabled(true);
  for (int step = 0; step < 1000; ++step) {
    auto loss = torch::mse_loss(net(x), y);
    loss.backward();
    opt.step();
    at::autocast::clear_cache();
  }
}
void fp32_loop(Net net, torch::optim::Adam &opt, torch::Tensor x, torch::Tensor y) {
  for (int step = 0; step < 1000; ++step) {
    auto loss = torch::mse_loss(net(x), y);
    loss.backward();
    opt.step();
  }
}

// A step function called from the training loop: each call's forward reuses the cache.
void train_step(Net net, mpnanny::GradScaler &scaler, torch::optim::Adam &opt, torch::Tensor x,
                torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  scaler.step(opt);
// CHECK: :[[@LINE-1]]:10: warning: mpnanny::GradScaler::step updates the weights while the autocast-fp16 weight cache survives{{.*}} [mpnanny-autocast-cache]
  scaler.update();
}
void fit(Net net, mpnanny::GradScaler &scaler, torch::optim::Adam &opt, torch::Tensor x,
         torch::Tensor y) {
  for (int epoch = 0; epoch < 10; ++epoch)
    train_step(net, scaler, opt, x, y);
}

// Safe: the caller clears after every step; a step function called once.
void train_step_cleared(Net net, mpnanny::GradScaler &scaler, torch::optim::Adam &opt,
                        torch::Tensor x, torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}
void fit_cleared(Net net, mpnanny::GradScaler &scaler, torch::optim::Adam &opt, torch::Tensor x,
                 torch::Tensor y) {
  for (int epoch = 0; epoch < 10; ++epoch) {
    train_step_cleared(net, scaler, opt, x, y);
    at::autocast::clear_cache();
  }
}
void single_step(Net net, mpnanny::GradScaler &scaler, torch::optim::Adam &opt, torch::Tensor x,
                 torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}
void fit_once(Net net, mpnanny::GradScaler &scaler, torch::optim::Adam &opt, torch::Tensor x,
              torch::Tensor y) {
  single_step(net, scaler, opt, x, y);
}

// Safe: autocast caches casts of fp32 leaves only, so an optimizer over parameters that
// the constructor converted to bf16 updates weights that were never cached.
struct Bf16Trainer {
  Net net_;
  std::unique_ptr<torch::optim::AdamW> opt_;
  Bf16Trainer() {
    net_->to(torch::kBFloat16);
    opt_ = std::make_unique<torch::optim::AdamW>(net_->parameters());
  }
  void fit(torch::Tensor x, torch::Tensor y) {
    at::autocast::set_enabled(true);
    for (int step = 0; step < 100; ++step) {
      auto loss = torch::mse_loss(net_(x), y);
      loss.backward();
      opt_->step();
    }
    at::autocast::set_enabled(false);
  }
};
// The same trainer over fp32 parameters reuses stale casts.
struct Fp32Trainer {
  Net net_;
  std::unique_ptr<torch::optim::AdamW> opt_;
  Fp32Trainer() { opt_ = std::make_unique<torch::optim::AdamW>(net_->parameters()); }
  void fit(torch::Tensor x, torch::Tensor y) {
    at::autocast::set_enabled(true);
    for (int step = 0; step < 100; ++step) {
      auto loss = torch::mse_loss(net_(x), y);
      loss.backward();
      opt_->step();
// CHECK: :[[@LINE-1]]:13: warning: torch::optim::AdamW::step updates the weights while the autocast-fp16 weight cache survives{{.*}} [mpnanny-autocast-cache]
    }
    at::autocast::set_enabled(false);
  }
};

// RUN: %mpnanny_check --checks='-*,mpnanny-master-weights' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-master-weights' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{4, 4};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

// torchdistx PR #52, pytorch/ao PR #1124: pure low-precision training.
void half_adam(Net net) {
  net->to(torch::kHalf);
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-4));
// CHECK: :[[@LINE-1]]:22: warning: torch::optim::Adam updates fp16 parameters in place with no fp32 master copy: an update smaller than half an ulp of the weight (0.02-0.05 % of |w| in fp16) rounds away{{.*}} [mpnanny-master-weights]
// CHECK: :[[@LINE-2]]:22: note: keep fp32 master weights
// CHECK: :[[@LINE-4]]:3: note: fp16 context: the model 'net' is converted to fp16 here
}

void bf16_sgd(Net net) {
  net->to(torch::kCUDA, torch::kBFloat16);
  auto opt = std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.01));
// CHECK: :[[@LINE-1]]:14: warning: torch::optim::SGD updates bf16 parameters in place with no fp32 master copy: an update smaller than half an ulp of the weight (0.2-0.4 % of |w| in bf16){{.*}} [mpnanny-master-weights]
  auto rms = torch::optim::RMSprop(std::vector<torch::Tensor>(net->parameters()));
// CHECK: :[[@LINE-1]]:14: warning: torch::optim::RMSprop updates bf16 parameters {{.*}} [mpnanny-master-weights]
}

void half_tensors() {
  auto w = torch::randn({16, 16}, torch::dtype(torch::kHalf)).requires_grad_();
  auto b = torch::zeros({16}).to(torch::kHalf).requires_grad_();
  torch::optim::AdamW opt({w, b});
// CHECK: :[[@LINE-1]]:23: warning: torch::optim::AdamW updates fp16 parameters {{.*}} [mpnanny-master-weights]
  std::vector<torch::Tensor> params;
  params.push_back(w);
  torch::optim::Adagrad ada(params);
// CHECK: :[[@LINE-1]]:25: warning: torch::optim::Adagrad updates fp16 parameters {{.*}} [mpnanny-master-weights]
}

// Safe: fp32 master copies of a half model, given to the optimizer.
void master_copy(Net net, torch::Tensor x) {
  net->to(torch::kHalf);
  std::vector<torch::Tensor> master;
  for (auto &p : net->parameters())
    master.push_back(p.detach().clone().to(torch::kFloat).requires_grad_());
  torch::optim::Adam opt(master, torch::optim::AdamOptions(1e-4));
  net(x.to(torch::kHalf)).sum().backward();
  auto params = net->parameters();
  for (size_t i = 0; i < master.size(); ++i)
    master[i].mutable_grad() = params[i].grad().to(torch::kFloat);
  opt.step();
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < master.size(); ++i)
    params[i].copy_(master[i]);
}

// Safe: fp32 parameters under autocast; a model converted back to fp32.
void autocast_model(Net net, torch::Tensor x) {
  torch::optim::Adam opt(net->parameters());
  at::autocast::set_enabled(true);
  net(x).sum().backward();
  at::autocast::set_enabled(false);
  opt.step();
}
void converted_back(Net net) {
  net->to(torch::kHalf);
  net->to(torch::kFloat);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1));
}
void fp32_model(Net net) {
  torch::optim::Adam opt(net->parameters());
}

// Modules held as members, converted in the constructor that builds the optimizer over
// parameter groups (DooT2's trainer does this).
struct PureBf16Trainer {
  Net encoder_, decoder_;
  std::unique_ptr<torch::optim::AdamW> opt_;
  PureBf16Trainer() {
    encoder_->to(torch::kCUDA, torch::kBFloat16);
    decoder_->to(torch::kCUDA, torch::kBFloat16);
    opt_ = std::make_unique<torch::optim::AdamW>(std::vector<torch::optim::OptimizerParamGroup>{
        encoder_->parameters(), decoder_->parameters()});
// CHECK: :[[@LINE-2]]:12: warning: torch::optim::AdamW updates bf16 parameters in place with no fp32 master copy{{.*}} [mpnanny-master-weights]
// CHECK: :[[@LINE-5]]:5: note: bf16 context: the model 'encoder_' is converted to bf16 here
  }
};

// A member converted in another method of the unit: the class is bf16 wherever it is used.
struct LaterConverted {
  Net net_;
  void to_bf16() { net_->to(torch::kBFloat16); }
  void make_optimizer() {
    torch::optim::Adam opt(net_->parameters());
// CHECK: :[[@LINE-1]]:24: warning: torch::optim::Adam updates bf16 parameters in place{{.*}} [mpnanny-master-weights]
  }
};

// Safe: one group stays fp32 (the decoder is never converted), so the optimizer is not
// pure half; and a converted member that is not the one optimized.
struct MixedGroups {
  Net encoder_;
  torch::nn::Linear head_{4, 4};
  MixedGroups() {
    encoder_->to(torch::kHalf);
    torch::optim::AdamW opt(std::vector<torch::optim::OptimizerParamGroup>{
        encoder_->parameters(), head_->parameters()});
  }
};
struct OtherMemberConverted {
  Net teacher_;
  torch::nn::Linear student_{4, 4};
  OtherMemberConverted() {
    teacher_->to(torch::kHalf);
    torch::optim::SGD opt(student_->parameters(), torch::optim::SGDOptions(0.1));
  }
};

// The constructor builds an optimizer that init() replaces after converting the modules:
// the replacement is the optimizer that trains, and the one reported.
struct RebuiltInInit {
  Net encoder_;
  std::unique_ptr<torch::optim::AdamW> opt_;
  RebuiltInInit() : opt_(std::make_unique<torch::optim::AdamW>(encoder_->parameters())) {}
  void init() {
    encoder_->to(torch::kBFloat16);
    opt_ = std::make_unique<torch::optim::AdamW>(encoder_->parameters());
// CHECK: :[[@LINE-1]]:12: warning: torch::optim::AdamW updates bf16 parameters in place{{.*}} [mpnanny-master-weights]
  }
};

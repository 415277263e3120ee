// Fuzzes the YAML rules loader (checks/KnowledgeBase) with one rule file. Contract: any file
// gives a knowledge base or a LoadError whose message starts with file:line:col: error:,
// never another exception, a crash, a leak or undefined behaviour.
#include <cstdint>
#include <string>

#include "FuzzSupport.h"
#include "KnowledgeBase.h"

using mpnanny::kb::KnowledgeBase;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const mpnanny::fuzz::ScratchDir dir("rules");
  const std::string file = dir.path() + "/rules.yaml";
  mpnanny::fuzz::write_file(file, data, size);
  try {
    const auto kb = KnowledgeBase::loadDirectory(dir.path());
    // What the checks and the runtime do with a loaded base: the lookups by every spelling.
    for (const auto& op : kb->ops()) {
      if (kb->findById(op.Id) == nullptr) mpnanny::fuzz::broken("op '" + op.Id + "' not found by its id");
      for (const auto& name : op.Functions) kb->findFunction(name);
      for (const auto& name : op.Methods) kb->findMethod(name);
      for (const auto& name : op.Functional) kb->findFunctional(name);
      for (const auto& name : op.Modules) kb->findModule(name);
    }
    for (const auto& option : kb->optionValues()) kb->findOption(option.Class, option.Setter);
    kb->atenOps();
  } catch (const mpnanny::kb::LoadError& error) {
    const std::string message = error.what();
    if (message.rfind(file + ":", 0) != 0 || message.find(": error: ") == std::string::npos)
      mpnanny::fuzz::broken("a load error that does not point into the file: " + message);
  }
  return 0;
}

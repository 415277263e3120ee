//===--- Diff.cpp - mpnanny-mcp --------------------------------------------===//
#include "Diff.h"

#include <algorithm>

namespace mpnanny::mcp {

/// Lines with their '\n' (the last may have none).
static std::vector<std::string> splitLines(const std::string &Text) {
  std::vector<std::string> Lines;
  size_t Begin = 0;
  while (Begin < Text.size()) {
    size_t End = Text.find('\n', Begin);
    End = End == std::string::npos ? Text.size() : End + 1;
    Lines.push_back(Text.substr(Begin, End - Begin));
    Begin = End;
  }
  return Lines;
}

static void emit(std::string &Out, char Mark, const std::string &Line) {
  Out += Mark;
  Out += Line;
  if (Line.empty() || Line.back() != '\n')
    Out += "\n\\ No newline at end of file\n";
}

std::string unifiedDiff(const std::string &Label, const std::string &Before,
                        std::vector<Replacement> Replacements, unsigned Context) {
  std::sort(Replacements.begin(), Replacements.end(),
            [](const Replacement &A, const Replacement &B) { return A.Offset < B.Offset; });
  const std::vector<std::string> Lines = splitLines(Before);
  std::vector<size_t> Starts;
  for (size_t I = 0, Off = 0; I < Lines.size(); Off += Lines[I++].size())
    Starts.push_back(Off);
  auto LineOf = [&](size_t Offset) -> size_t {
    if (Lines.empty())
      return 0;
    auto It = std::upper_bound(Starts.begin(), Starts.end(), Offset);
    return static_cast<size_t>(It - Starts.begin()) - 1;
  };

  // Replacements on the same or touching lines become one change of whole lines.
  struct Change {
    size_t First, Last; ///< old lines, inclusive
    std::vector<const Replacement *> Parts;
    std::vector<std::string> New;
  };
  std::vector<Change> Changes;
  for (const auto &R : Replacements) {
    if (R.Offset > Before.size() || R.Offset + R.Length > Before.size())
      continue;
    size_t First = LineOf(R.Offset);
    size_t Last = LineOf(R.Length ? R.Offset + R.Length - 1 : R.Offset);
    if (!Changes.empty() && First <= Changes.back().Last) {
      Changes.back().Last = std::max(Changes.back().Last, Last);
      Changes.back().Parts.push_back(&R);
    } else {
      Changes.push_back({First, Last, {&R}, {}});
    }
  }
  if (Lines.empty() && !Changes.empty()) {
    // An empty file: a single insertion.
    std::string New;
    for (const auto *R : Changes.front().Parts)
      New += R->Text;
    std::string Out = "--- a/" + Label + "\n+++ b/" + Label + "\n";
    auto NewLines = splitLines(New);
    Out += "@@ -0,0 +1," + std::to_string(NewLines.size()) + " @@\n";
    for (const auto &L : NewLines)
      emit(Out, '+', L);
    return NewLines.empty() ? "" : Out;
  }
  for (auto &C : Changes) {
    size_t Begin = Starts[C.First];
    size_t End = C.Last + 1 < Starts.size() ? Starts[C.Last + 1] : Before.size();
    std::string Text = Before.substr(Begin, End - Begin);
    // Back to front, so earlier offsets stay valid.
    for (auto It = C.Parts.rbegin(); It != C.Parts.rend(); ++It)
      Text.replace((*It)->Offset - Begin, (*It)->Length, (*It)->Text);
    C.New = splitLines(Text);
  }
  Changes.erase(std::remove_if(Changes.begin(), Changes.end(),
                               [&](const Change &C) {
                                 return std::equal(C.New.begin(), C.New.end(),
                                                   Lines.begin() + C.First,
                                                   Lines.begin() + C.Last + 1) &&
                                        C.New.size() == C.Last - C.First + 1;
                               }),
                Changes.end());
  if (Changes.empty())
    return "";

  std::string Out = "--- a/" + Label + "\n+++ b/" + Label + "\n";
  long Delta = 0; // new line number minus old line number before the current hunk
  for (size_t H = 0; H < Changes.size();) {
    // A hunk takes every following change whose context would touch its own.
    size_t E = H;
    while (E + 1 < Changes.size() && Changes[E + 1].First <= Changes[E].Last + 2 * Context + 1)
      ++E;
    size_t OldBegin = Changes[H].First >= Context ? Changes[H].First - Context : 0;
    size_t OldEnd = std::min(Lines.size() - 1, Changes[E].Last + Context);
    std::string Body;
    size_t OldCount = 0, NewCount = 0;
    size_t Line = OldBegin;
    long HunkDelta = 0;
    for (size_t I = H; I <= E; ++I) {
      for (; Line < Changes[I].First; ++Line, ++OldCount, ++NewCount)
        emit(Body, ' ', Lines[Line]);
      for (; Line <= Changes[I].Last; ++Line, ++OldCount)
        emit(Body, '-', Lines[Line]);
      for (const auto &L : Changes[I].New) {
        emit(Body, '+', L);
        ++NewCount;
      }
      HunkDelta += static_cast<long>(Changes[I].New.size()) -
                   static_cast<long>(Changes[I].Last - Changes[I].First + 1);
    }
    for (; Line <= OldEnd; ++Line, ++OldCount, ++NewCount)
      emit(Body, ' ', Lines[Line]);
    long NewBegin = static_cast<long>(OldBegin) + Delta;
    auto Range = [](long Begin, size_t Count) {
      // A range of no lines names the line before it.
      return std::to_string(Count ? Begin + 1 : Begin) + "," + std::to_string(Count);
    };
    Out += "@@ -" + Range(static_cast<long>(OldBegin), OldCount) + " +" +
           Range(NewBegin, NewCount) + " @@\n" + Body;
    Delta += HunkDelta;
    H = E + 1;
  }
  return Out;
}

} // namespace mpnanny::mcp

// The GPU-side Python tools, as far as a machine without torch can check them: peers.py runs
// the same cases as switchyard-bench (names, paths, shapes, TP), plot.py reads the bench's
// JSON, and a peer whose library cannot be imported is skipped with the reason, not failed.
// Skipped when CMake found no python3.
#include "bench_runner.hpp"

#include <doctest/doctest.h>

#include <fstream>

namespace switchyard::test {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string describe_cases(const JsonValue& list) {
  std::string out;
  for (const auto& c : list.items)
    out += c["name"].text + " " + c["family"].text + " " + c["path"].text + " [" +
           std::to_string(static_cast<long long>(c["shape"][0].number)) + ", " +
           std::to_string(static_cast<long long>(c["shape"][1].number)) + "] tp" +
           std::to_string(static_cast<int>(c["tp_size"].number)) + "\n";
  return out;
}

}  // namespace

TEST_CASE("peers.py and switchyard-bench run the same cases") {
  if (python().empty()) {
    MESSAGE("no python3: skipped");
    return;
  }
  for (bool small : {false, true}) {
    std::vector<std::string> bench_args{"--list-cases", "--json", "-"};
    std::vector<std::string> peer_args{bench_script("peers.py"), "--list-cases", "--json", "-"};
    if (small) {
      bench_args.push_back("--small");
      peer_args.push_back("--small");
    }
    const RunResult bench = run_bench(bench_args);
    const RunResult peers = run_program(python(), peer_args);
    INFO(bench.err << peers.err);
    REQUIRE(bench.exit_code == 0);
    REQUIRE(peers.exit_code == 0);
    const std::string expected = describe_cases(parse_json(bench.out));
    CHECK(expected.size() > 0);
    CHECK(describe_cases(parse_json(peers.out)) == expected);
  }
}

TEST_CASE("plot.py reads the bench's JSON: a table always, a PNG when matplotlib is there") {
  if (python().empty()) {
    MESSAGE("no python3: skipped");
    return;
  }
  ScratchDir dir;
  const RunResult bench = run_bench({"--device", "cpu", "--small", "--family", "ce", "--cases",
                                     "ce_tp1_per_token", "--backends", "native", "--json",
                                     dir / "bench.json", "--quiet"});
  REQUIRE(bench.exit_code == 0);

  const RunResult table = run_program(python(), {bench_script("plot.py"), dir / "bench.json", "--table-only"});
  INFO(table.err);
  REQUIRE(table.exit_code == 0);
  CHECK(contains(table.out, "ce_tp1_per_token"));
  CHECK(contains(table.out, "native"));
  CHECK(contains(table.out, "PASS"));

  const RunResult png = run_program(python(), {bench_script("plot.py"), dir / "bench.json", "-o", dir / "bench.png"});
  INFO(png.err);
  if (png.exit_code == 2) {
    CHECK(contains(png.err, "matplotlib is not installed"));
    MESSAGE("no matplotlib: PNG not checked");
    return;
  }
  REQUIRE(png.exit_code == 0);
  std::ifstream file(dir / "bench.png", std::ios::binary);
  char magic[4] = {};
  file.read(magic, 4);
  CHECK(std::string(magic, 4) == "\x89PNG");

  const RunResult wrong = run_program(python(), {bench_script("plot.py"), bench_script("README.md")});
  CHECK(wrong.exit_code != 0);
}

// peers.py's Liger peers need liger_kernel (and a GPU); where it cannot be imported they are
// reported as skipped, with the reason, and the run does not fail. Checked here without torch:
// the import made to fail on purpose, peers.py's exit code on such results, and plot.py's summary.
TEST_CASE("peers.py: a peer whose library cannot be imported is skipped, with the reason") {
  if (python().empty()) {
    MESSAGE("no python3: skipped");
    return;
  }
  ScratchDir dir;
  const std::string script = R"(
import json, sys
sys.path.insert(0, sys.argv[1])
sys.modules["liger_kernel"] = None  # not importable, whatever this machine has installed
import peers
try:
    peers.liger_norm_fn("liger_rms_norm", 1e-5)
    print("loaded")
except peers.PeerUnavailable as e:
    reason = str(e)
    print("unavailable: " + reason)
def result(case, name, status, passed=True, reason=""):
    ran = status == "ok"
    return dict(case=case, family="norm", path="fwd_bwd", kind="peer", name=name, status=status,
                reason=reason, notes=[], x_floor=1.5 if ran else None,
                gb_per_s=3000.0 if ran else None, memory=dict(extra_bytes=0) if ran else None,
                time_ms=dict(median=0.25, min=0.24, max=0.3) if ran else None,
                check=dict(ran=ran, passed=ran and passed, max_rel_error=1e-3 if ran else None))
cases = ["rmsnorm_4096", "rmsnorm_8192"]
results = [result(c, "torch_rms_norm", "ok") for c in cases]
results += [result(c, "liger_rms_norm", "skipped", reason=reason) for c in cases]
print("exit skipped %d" % peers.exit_code(dict(results=results)))
print("exit error %d" % peers.exit_code(dict(results=results + [
    result(cases[0], "torch_compile_rms_norm", "error", reason="RuntimeError: boom")])))
print("exit wrong %d" % peers.exit_code(dict(results=results + [
    result(cases[0], "torch_compile_rms_norm", "ok", passed=False)])))
doc = dict(schema="switchyard-bench/1", tool="peers.py", results=results,
           cases=[dict(name=c, family="norm", path="fwd_bwd", shape=[16384, 4096],
                       floor=dict(name="5x tensor", bytes=671088640, ms=0.157)) for c in cases])
with open(sys.argv[2], "w") as f:
    json.dump(doc, f)
)";
  const std::string json = dir / "peers.json";
  // -B: no byte code next to the sources.
  const RunResult peers = run_program(python(), {"-B", "-c", script, bench_script(""), json});
  INFO(peers.out << peers.err);
  REQUIRE(peers.exit_code == 0);
  const std::string prefix = "unavailable: ";
  const auto at = peers.out.find(prefix);
  REQUIRE(at != std::string::npos);
  const std::string reason =
      peers.out.substr(at + prefix.size(), peers.out.find('\n', at) - at - prefix.size());
  CHECK(reason.rfind("liger_kernel not importable: ", 0) == 0);
  CHECK(contains(peers.out, "exit skipped 0"));
  CHECK(contains(peers.out, "exit error 3"));
  CHECK(contains(peers.out, "exit wrong 3"));

  const RunResult table = run_program(python(), {bench_script("plot.py"), json, "--table-only"});
  INFO(table.out << table.err);
  REQUIRE(table.exit_code == 0);
  CHECK(contains(table.out, "torch_rms_norm (peer)"));
  CHECK(contains(table.out, "* liger_rms_norm (peer): skipped on rmsnorm_4096, rmsnorm_8192: " +
                                reason + "\n"));
}

}  // namespace switchyard::test

// Host test of the train_gpt binary (built by `make test` before the host tests run): each bad input a user
// may give in the first hour ends with ONE error line, the last and only line on stderr, the right exit code
// (2: usage, found before the GPU; 1: a failure while running), and nothing on stdout but the run's short
// summary. Every case must finish before the CUDA runtime is touched: the dynamic loader's log (LD_DEBUG)
// must not show train_gpt loading libcuda, which its CUDA runtime does at the first CUDA call; on a machine
// without a GPU a valid run shows that load (the control). So this runs, and means the same, with or
// without a GPU.
//
// BAD_INPUT_TABLE=FILE writes the cases as the Markdown table of docs/usage.md ("Bad input, first hour").
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "llmc/formats/checkpoint.h"
#include "llmc/formats/dataloader.h"
#include "llmc/formats/hellaswag.h"
#include "llmc/formats/json.h"
#include "llmc/formats/tokenizer.h"
#include "llmc/model/weights_io.h"
#include "test/temp_dir.h"
#include "test/testing.h"

namespace {

using testing::TempDir;

// The binary under test: $TRAIN_GPT, else ./train_gpt (make runs the tests from the repository root).
std::string train_gpt_path() {
    const char* env = getenv("TRAIN_GPT");
    char resolved[PATH_MAX];
    return realpath(env && *env ? env : "./train_gpt", resolved) ? resolved : "";
}

struct Outcome {
    int exit_code = -1;
    std::string out, err, ld_log;
    double ms = 0;
    bool hung = false;  // killed after kHangSeconds (a reader waiting on a FIFO, say)
};

// A case that has not ended by then is killed and fails, instead of hanging the test.
constexpr double kHangSeconds = 10;

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Variables that would make train_gpt one rank of a launcher's job (a CI runner inside Slurm, say).
const char* const kLauncherVars[] = {"RANK",
                                     "WORLD_SIZE",
                                     "LOCAL_RANK",
                                     "MASTER_ADDR",
                                     "MASTER_PORT",
                                     "OMPI_COMM_WORLD_RANK",
                                     "OMPI_COMM_WORLD_SIZE",
                                     "OMPI_COMM_WORLD_LOCAL_RANK",
                                     "PMI_RANK",
                                     "PMI_SIZE",
                                     "MPI_LOCALRANKID",
                                     "SLURM_PROCID",
                                     "SLURM_NTASKS",
                                     "SLURM_LOCALID",
                                     "TRAIN_GPT_TEST_POISON_STEP",
                                     "TRAIN_GPT_TEST_EXPORT_INIT"};

// Runs `bin args` in `cwd` with stdout, stderr and the loader's log captured in files there.
Outcome run(const std::string& bin, const std::vector<std::string>& args, const std::string& cwd) {
    const std::string out = cwd + "/.out", err = cwd + "/.err", ld = cwd + "/.ld";
    std::system(("rm -f '" + ld + "'.*").c_str());
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        for (const char* v : kLauncherVars) unsetenv(v);
        setenv("LD_DEBUG", "files", 1);
        setenv("LD_DEBUG_OUTPUT", ld.c_str(), 1);  // the loader appends .<pid>
        const int fo = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int fe = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || fe < 0 || chdir(cwd.c_str()) != 0) _exit(127);
        dup2(fo, 1);
        dup2(fe, 2);
        std::vector<char*> argv = {const_cast<char*>(bin.c_str())};
        for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(bin.c_str(), argv.data());
        _exit(127);
    }
    int status = 0;
    Outcome o;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() - t0 > std::chrono::duration<double>(kHangSeconds)) {
            o.hung = true;
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        usleep(5000);
    }
    o.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    o.out = read_file(out);
    o.err = read_file(err);
    o.ld_log = read_file(ld + "." + std::to_string(pid));
    return o;
}

// The CUDA runtime (linked into train_gpt) loads the driver library at its first call. (cuBLASLt probes for
// it while the process loads, before main: that line names libcublasLt, not train_gpt.)
bool touched_cuda(const Outcome& o, const std::string& bin) {
    for (size_t p = 0; (p = o.ld_log.find("libcuda.so", p)) != std::string::npos; p++) {
        const size_t eol = o.ld_log.find('\n', p);
        if (o.ld_log.substr(p, eol - p).find("dynamically loaded by " + bin + " ") != std::string::npos)
            return true;
    }
    return false;
}

// stdout holds only the summary: "train_gpt: ..." then lines indented by two spaces (or nothing at all).
bool only_summary(const std::string& out) {
    if (out.empty()) return true;
    if (out.rfind("train_gpt: ", 0) != 0 || out.back() != '\n') return false;
    for (size_t p = out.find('\n'); p + 1 < out.size(); p = out.find('\n', p + 1))
        if (out.compare(p + 1, 2, "  ") != 0) return false;
    return true;
}

bool have_gpu() { return std::system("nvidia-smi -L > /dev/null 2>&1") == 0; }

// The inputs: small files a user might point the flags at, in one folder that is the working directory.
struct Fixture {
    TempDir dir{"host_bad_input"};
    // A tiny model whose shapes the weight and checkpoint files below are checked against.
    const std::vector<std::string> small = {"--model", "124m", "--layers", "2",   "--channels", "64",
                                            "--heads", "4",    "--vocab",  "256", "--max-seq",  "64",
                                            "--seq",   "64",   "--batch",  "2"};

    std::vector<std::string> small_one_sequence() const {  // the small model's flags without --batch
        return std::vector<std::string>(small.begin(), small.end() - 2);
    }

    Fixture() {
        ModelConfig m;
        m.num_layers = 2, m.channels = 64, m.num_heads = 4, m.vocab_size = 256, m.max_seq_len = 64;
        export_weights(dir.file("good.safetensors"), ExportFormat::Seed, m,
                       std::vector<float>(num_parameters(m)));
        ModelConfig wide = m;
        wide.channels = 128;
        export_weights(dir.file("wide.safetensors"), ExportFormat::Seed, wide,
                       std::vector<float>(num_parameters(wide)));
        std::ofstream(dir.file("empty.safetensors"));
        std::mt19937 rng(20240520);  // fixed bytes: the error line is the same every run
        std::string noise(4096, '\0');
        for (char& c : noise) c = (char)(rng() & 0xff);
        std::ofstream(dir.file("random.safetensors"), std::ios::binary) << noise;
        std::ofstream(dir.file("junk_tokenizer.bin"), std::ios::binary) << noise;
        write_shards();
        write_checkpoints();
        write_hellaswag_files();
        std::ofstream(dir.file("afile")) << "a regular file, not a folder\n";
        write_fifos();
        write_bytes_shards();
    }

    // FIFOs where files belong: a reader that opens one without checking waits for a writer forever.
    void write_fifos() {
        mkfifo(dir.file("fifo.bin").c_str(), 0644);
        mkdir(dir.file("fifo_ckpt").c_str(), 0755);
        mkfifo(dir.file("fifo_ckpt/ckpt_00000010.safetensors").c_str(), 0644);
    }
    // bytes/: shards of byte tokens with the bytes tokenizer beside them (as prepare_data.py writes them).
    void write_bytes_shards() {
        mkdir(dir.file("bytes").c_str(), 0755);
        std::vector<uint16_t> tokens(1000);
        for (size_t i = 0; i < tokens.size(); i++) tokens[i] = (uint16_t)(i % 256);
        write_shard(dir.file("bytes/train_000.bin"), tokens);
        Tokenizer::bytes().save(dir.file("bytes/tokenizer.bin"));
    }

    void write_shards() {
        std::vector<uint16_t> tokens(1000);
        for (size_t i = 0; i < tokens.size(); i++) tokens[i] = (uint16_t)(i % 256);
        write_shard(dir.file("good_train_000.bin"), tokens);
        write_shard(dir.file("magic.bin"), tokens);
        patch(dir.file("magic.bin"), 0, "\x01\x02\x03\x04");  // the header's magic number
        write_shard(dir.file("short.bin"), tokens);
        truncate(dir.file("short.bin").c_str(), 1024 + 1000);  // half the tokens
        tokens[7] = 300;                                       // >= --vocab 256
        write_shard(dir.file("big_id_val_000.bin"), tokens);
    }
    // HellaSwag files: one of bytes whose longest row (70 tokens) is past --seq 64, one of GPT-2's
    // vocabulary.
    void write_hellaswag_files() {
        HellaSwagSet set;
        set.vocab_size = 256;
        HellaSwagExample ex;
        ex.context.assign(60, 'a');
        ex.endings = {std::vector<int>(10, 'b'), {'c'}, {'d'}, {'e'}};
        set.examples = {ex};
        std::ofstream(dir.file("long_hs.bin"), std::ios::binary) << serialize_hellaswag(set);
        set.vocab_size = 50257;
        set.examples[0].context.resize(3);
        std::ofstream(dir.file("gpt2_hs.bin"), std::ios::binary) << serialize_hellaswag(set);
    }
    void patch(const std::string& path, long offset, const char* bytes) {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(offset);
        f.write(bytes, (std::streamsize)std::strlen(bytes));
    }
    void write_checkpoints() {
        mkdir(dir.file("no_ckpt").c_str(), 0755);
        mkdir(dir.file("garbage").c_str(), 0755);
        std::ofstream(dir.file("garbage/ckpt_00000010.safetensors")) << "not a checkpoint";
        std::vector<float> w(4);
        CheckpointMeta meta;  // a valid checkpoint of GPT-2 124M, not of the small model
        meta.step = 10;
        meta.opt_step = 10;
        meta.model = "L=12 C=768 H=12 V=50304 maxT=1024 gelu=erf";
        meta.recipe = "bf16";
        meta.config = "{}";
        mkdir(dir.file("other").c_str(), 0755);
        write_checkpoint(dir.file("other"), meta, {{"master.w", "F32", {4}, w.data(), w.size() * 4}}, 2);
    }
};

// Small: after the small-model flags (the fixture's files fit it); Small1: the same without --batch (for
// --generate, which runs one sequence and refuses --batch).
enum class Model { Default, Small, Small1 };
enum class Match { Whole, Start };  // Start: the line starts with `error` (the rest names random bytes)

struct Case {
    const char* what;  // the mistake, for the table
    std::vector<std::string> args;
    Model model;
    int exit_code;
    std::string error;  // the stderr line without "error: " and '\n'
    Match match = Match::Whole;
};

// clang-format off
// Flags and their combinations (no file involved).
std::vector<Case> flag_cases() {
    const Model D = Model::Default;
    return {
        {"unknown precision", {"--precision", "fp9"}, D, 2, "--precision: 'fp9' is not one of bf16, fp8"},
        {"unknown model", {"--model", "7b"}, D, 2, "--model: '7b' is not one of 124m, 350m, 774m, 1.5b"},
        {"zero steps", {"--steps", "0"}, D, 2, "--steps: must be >= 1, got 0"},
        {"a word for a number", {"--batch", "abc"}, D, 2, "--batch: 'abc' is not an integer"},
        {"--seq past --max-seq", {"--seq", "2048"}, D, 2, "--seq 2048 exceeds --max-seq 1024"},
        {"total batch not a multiple", {"--total-batch", "1000"}, D, 2,
         "--total-batch 1000 is not a multiple of --batch x --seq x GPUs = 12 x 1024 x 1 = 12288 tokens"},
        {"a flag where a value belongs", {"--log-dir", "--steps", "5"}, D, 2,
         "--log-dir: expected a value, got the flag --steps (for a value that starts with '-', write "
         "--log-dir=VALUE)"},
        {"--export missing its path", {"--export", "--steps", "5"}, D, 2,
         "--export: expected a value, got the flag --steps (for a value that starts with '-', write --export=VALUE)"},
        {"unknown flag", {"--batch-size", "12"}, D, 2, "unknown flag --batch-size (train_gpt --help lists the flags)"},
        {"stray argument", {"--steps", "5", "10"}, D, 2,
         "unexpected argument '10': a value must follow its flag (train_gpt --help lists the flags)"},
        {"--prompt without --sample-every", {"--prompt", "Once upon a time"}, D, 2,
         "--prompt: has no effect without --sample-every N (text samples are off)"},
        {"an FP8 flag with bf16", {"--fp8-history", "16"}, D, 2,
         "--fp8-history: has no effect with --precision bf16 (the FP8 flags apply to --precision fp8)"},
        {"--export without weights", {"--export", "w.safetensors"}, D, 2,
         "--export: nothing to export: pass --resume DIR or --init-from FILE (else it would write the random "
         "initialization), or --export-at-end to export after training"},
    };
}

// Files and folders the flags name (the fixture's).
std::vector<Case> file_cases() {
    const Model D = Model::Default, S = Model::Small;
    return {
        {"--init-from an empty file", {"--init-from", "empty.safetensors"}, S, 2,
         "--init-from: empty.safetensors: file is 0 bytes, too short for a safetensors file (8-byte header length "
         "missing)"},
        {"--init-from random bytes", {"--init-from", "random.safetensors"}, S, 2,
         "--init-from: random.safetensors: header length ", Match::Start},
        {"--init-from a missing file", {"--init-from", "nope.safetensors"}, S, 2,
         "--init-from: nope.safetensors: cannot open: No such file or directory"},
        {"--init-from another model size", {"--init-from", "wide.safetensors"}, S, 2,
         "--init-from: wide.safetensors: tok_embd.weight has shape [256, 128], this model needs [256, 64]: the "
         "file is for a different model size (use --model/--layers/--channels...)"},
        {"--resume a missing folder", {"--resume", "nope"}, S, 2,
         "--resume: cannot open the folder 'nope': No such file or directory"},
        {"--resume a folder without checkpoints", {"--resume", "no_ckpt"}, S, 2,
         "--resume: no checkpoint (ckpt_*.safetensors) in 'no_ckpt'"},
        {"--resume a folder of garbage", {"--resume", "garbage"}, S, 2,
         "--resume: no valid checkpoint in 'garbage' (last: garbage/ckpt_00000010.safetensors: header length ",
         Match::Start},
        {"--resume-if-present a folder of garbage (resumes: never starts over)", {"--resume-if-present", "garbage"},
         S, 2, "--resume: no valid checkpoint in 'garbage' (last: garbage/ckpt_00000010.safetensors: header length ",
         Match::Start},
        {"--resume-if-present another model's checkpoint", {"--resume-if-present", "other"}, S, 2,
         "--resume: other/ckpt_00000010.safetensors: checkpoint of a different model ", Match::Start},
        {"--resume another model's checkpoint", {"--resume", "other"}, S, 2,
         "--resume: other/ckpt_00000010.safetensors: checkpoint of a different model (L=12 C=768 H=12 V=50304 "
         "maxT=1024 gelu=erf), this run is L=2 C=64 H=4 V=256 maxT=64 gelu=erf"},
        {"missing shards", {"--train-data", "data/nope_*.bin"}, S, 2,
         "--train-data: no file matches 'data/nope_*.bin' (expected llm.c token shards, e.g. from "
         "scripts/data/prepare_data.py)"},
        {"a shard with the wrong magic", {"--train-data", "magic.bin"}, S, 2,
         "--train-data: data file 'magic.bin': bad magic number 67305985 (expected 20240520; not an llm.c token "
         "shard?)"},
        {"a truncated shard", {"--train-data", "short.bin"}, S, 2,
         "--train-data: data file 'short.bin': truncated: 2024 bytes but the header says 1000 tokens (3024 bytes)"},
        {"a token id past --vocab", {"--val-data", "big_id_val_*.bin"}, S, 2,
         "--val-data: data file 'big_id_val_000.bin': token id 300 at token 7 is >= the vocabulary size 256 (pass "
         "a larger --vocab or re-tokenize)"},
        {"a tokenizer of random bytes", {"--sample-every", "1", "--tokenizer", "junk_tokenizer.bin"}, S, 2,
         "--tokenizer 'junk_tokenizer.bin': bad magic (not a tokenizer file written by prepare_data.py)"},
        {"--log-dir under a file", {"--log-dir", "afile/logs"}, S, 2,
         "--log-dir 'afile/logs': 'afile' is not a directory"},
        {"--checkpoint-dir under a file", {"--checkpoint-dir", "afile/ckpt"}, S, 2,
         "--checkpoint-dir 'afile/ckpt': 'afile' is not a directory"},
        {"--eval-hellaswag a missing file", {"--batch", "4", "--eval-hellaswag", "nope.bin"}, S, 2,
         "--eval-hellaswag: 'nope.bin': cannot open: No such file or directory"},
        {"--eval-hellaswag random bytes", {"--batch", "4", "--eval-hellaswag", "junk_tokenizer.bin"}, S, 2,
         "--eval-hellaswag: 'junk_tokenizer.bin': bad magic (not a HellaSwag file written by "
         "scripts/data/prepare_hellaswag.py)"},
        {"--eval-hellaswag rows longer than --seq", {"--batch", "4", "--eval-hellaswag", "long_hs.bin"}, S, 2,
         "--eval-hellaswag: 'long_hs.bin': its longest row (context + ending) has 70 tokens and needs --seq >= 69, "
         "--seq is 64"},
        {"--eval-hellaswag of another tokenizer", {"--batch", "4", "--eval-hellaswag", "gpt2_hs.bin"}, S, 2,
         "--eval-hellaswag: 'gpt2_hs.bin': made with a tokenizer of 50257 entries, the model's vocabulary has 256 "
         "(prepare it with the model's tokenizer)"},
        {"--eval-hellaswag with --batch 2", {"--eval-hellaswag", "long_hs.bin"}, S, 2,
         "--eval-hellaswag: needs --batch >= 4 (an example's 4 endings are rows of one batch), got --batch 2"},
        {"--eval-every without --eval-hellaswag", {"--eval-every", "100"}, D, 2,
         "--eval-every: has no effect without --eval-hellaswag FILE (no HellaSwag evaluation)"},
        {"--eval-hellaswag-dump into a missing folder",
         {"--batch", "4", "--seq", "16", "--eval-hellaswag", "gpt2_hs.bin", "--vocab", "50304",
          "--eval-hellaswag-dump", "nodir/d.txt"}, S, 2,
         "--eval-hellaswag-dump: 'nodir/d.txt': the folder 'nodir' does not exist"},
        {"--export into a missing folder", {"--init-from", "good.safetensors", "--export", "nodir/w.safetensors"}, S,
         2, "--export 'nodir/w.safetensors': 'nodir' is not a folder"},
        // the rough edges of the first hour: FIFOs, folders that take no file, --warmup past --steps
        {"a FIFO as the train shards", {"--train-data", "fifo.bin"}, S, 2,
         "--train-data: data file 'fifo.bin': not a regular file (a FIFO)"},
        {"a FIFO as the val shards", {"--val-data", "fifo.bin"}, S, 2,
         "--val-data: data file 'fifo.bin': not a regular file (a FIFO)"},
        {"--init-from a FIFO", {"--init-from", "fifo.bin"}, S, 2, "--init-from: fifo.bin: not a regular file (a FIFO)"},
        {"--resume a folder whose checkpoint is a FIFO", {"--resume", "fifo_ckpt"}, S, 2,
         "--resume: no valid checkpoint in 'fifo_ckpt' (last: fifo_ckpt/ckpt_00000010.safetensors: not a regular "
         "file (a FIFO))"},
        {"--tokenizer a FIFO", {"--sample-every", "1", "--tokenizer", "fifo.bin"}, S, 2,
         "--tokenizer 'fifo.bin': not a regular file (a FIFO)"},
        {"--eval-hellaswag a FIFO", {"--batch", "4", "--eval-hellaswag", "fifo.bin"}, S, 2,
         "--eval-hellaswag: 'fifo.bin': not a regular file (a FIFO)"},
        {"--gemm-cache a FIFO", {"--gemm-cache", "fifo.bin"}, D, 2, "--gemm-cache 'fifo.bin': not a regular file (a FIFO)"},
        {"--export into /proc", {"--init-from", "good.safetensors", "--export", "/proc/x.safetensors"}, S, 2,
         "--export '/proc/x.safetensors': cannot create a file in '/proc': ", Match::Start},
        {"--export-at-end into /proc", {"--export", "/proc/x.safetensors", "--export-at-end"}, S, 2,
         "--export '/proc/x.safetensors': cannot create a file in '/proc': ", Match::Start},
        {"--gemm-cache under /proc", {"--gemm-cache", "/proc/x/c.tsv"}, D, 2,
         "--gemm-cache '/proc/x/c.tsv': cannot create a file in '/proc': ", Match::Start},
        {"--ranks-per-gpu 0", {"--ranks-per-gpu", "0"}, D, 2, "--ranks-per-gpu: must be >= 1, got 0"},
        {"--ranks-per-gpu without a launcher", {"--ranks-per-gpu", "2"}, D, 2,
         "--ranks-per-gpu 2: this process is the only rank (no launcher started several); it has no effect on "
         "one"},
        {"--warmup past --steps", {"--steps", "50", "--warmup", "100"}, D, 2,
         "--warmup 100 exceeds --steps 50: the learning rate would never reach --lr (both count the whole run's "
         "optimizer steps)"},
    };
}

// The runs that do not train: a training flag with --export, --generate's own mistakes.
std::vector<Case> mode_cases() {
    const Model S = Model::Small, S1 = Model::Small1;
    return {
        {"a training flag with --export (no training)",
         {"--init-from", "good.safetensors", "--export", "w.safetensors", "--steps", "5"}, S, 2,
         "--steps: has no effect with --export (it writes the weights and exits, no training; --export-at-end "
         "exports after training)"},
        {"--generate without weights", {"--generate", "5"}, S1, 2,
         "--generate: no weights to generate from: pass --init-from FILE or --resume DIR (else it would sample the "
         "random initialization)"},
        {"--generate without a tokenizer (not bytes)",
         {"--vocab", "512", "--init-from", "good.safetensors", "--generate", "5"}, S1, 2,
         "--generate: no tokenizer: pass --tokenizer FILE (scripts/data/prepare_data.py writes tokenizer.bin next "
         "to the shards)"},
        {"--generate with --batch", {"--init-from", "good.safetensors", "--generate", "5", "--batch", "4"}, S, 2,
         "--batch: has no effect with --generate N (it prints the text of one sequence and exits: no training, "
         "nothing written)"},
    };
}

std::vector<Case> cases() {
    std::vector<Case> all = flag_cases();
    for (Case& c : file_cases()) all.push_back(std::move(c));
    for (Case& c : mode_cases()) all.push_back(std::move(c));
    return all;
}
// clang-format on

std::string joined(const std::vector<std::string>& args) {
    std::string s;
    for (const std::string& a : args)
        s += (s.empty() ? "" : " ") + (a.find(' ') != std::string::npos ? "'" + a + "'" : a);
    return s;
}

// Markdown, with '|' escaped so the table stays a table.
std::string cell(const std::string& s) {
    std::string out;
    for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
}

// Checks one outcome; "" or what is wrong.
std::string check(const Case& k, const Outcome& o, const std::string& bin) {
    const std::string line = o.err.substr(0, o.err.size() - (o.err.empty() ? 0 : 1));
    if (o.hung) return "hung: killed after " + std::to_string((int)kHangSeconds) + " s";
    if (o.exit_code != k.exit_code) return "exit code " + std::to_string(o.exit_code) + ", stderr: " + o.err;
    if (o.err.empty() || o.err.back() != '\n' || line.find('\n') != std::string::npos)
        return "stderr is not exactly one line: [" + o.err + "]";
    const std::string want = "error: " + k.error;
    if (k.match == Match::Start ? line.rfind(want, 0) != 0 : line != want)
        return "stderr [" + line + "], expected [" + want + "]";
    if (!only_summary(o.out)) return "stdout holds more than the summary: [" + o.out + "]";
    if (k.exit_code == 2 && !o.out.empty()) return "a usage error after output on stdout: [" + o.out + "]";
    if (touched_cuda(o, bin)) return "the CUDA runtime was loaded before the error";
    // Typically ~100 ms; the bound leaves room for a 2-core CI machine still linking other tests (one run
    // took 2.9 s there) while catching a wait on a device or a file.
    if (o.ms > 5000) return "took " + std::to_string(o.ms) + " ms";
    return "";
}

}  // namespace

TEST(every_bad_input_is_one_line_before_the_gpu) {
    const std::string bin = train_gpt_path();
    if (bin.empty())
        return testing::fail(__FILE__, __LINE__, "no ./train_gpt (make train_gpt; or set TRAIN_GPT)");
    Fixture fx;
    const char* table_path = getenv("BAD_INPUT_TABLE");
    std::string table = "| # | bad input | exit | the one line on stderr | ms |\n|---|---|---|---|---|\n";
    double slowest = 0;
    int n = 0;
    // One untimed start first: right after a build the first start reads the binary's libraries (cuBLASLt,
    // NCCL, NVRTC: ~0.9 GB) from disk, which took 8.4 s once on the build machine; the bound below is for the
    // run's own waits.
    run(bin, {"--version"}, fx.dir.path);
    for (const Case& k : cases()) {
        std::vector<std::string> args = k.model == Model::Small    ? fx.small
                                        : k.model == Model::Small1 ? fx.small_one_sequence()
                                                                   : std::vector<std::string>{};
        args.insert(args.end(), k.args.begin(), k.args.end());
        const Outcome o = run(bin, args, fx.dir.path);
        const std::string why = check(k, o, bin);
        if (!why.empty())
            testing::fail(__FILE__, __LINE__, std::string(k.what) + " (" + joined(k.args) + "): " + why);
        slowest = std::max(slowest, o.ms);
        char ms[32];
        snprintf(ms, sizeof ms, "%.0f", o.ms);
        table += "| " + std::to_string(++n) + " | " + k.what + ": `" + cell(joined(k.args)) + "`" +
                 (k.model != Model::Default ? " (small model)" : "") + " | " + std::to_string(o.exit_code) +
                 " | `" + cell(o.err.substr(0, o.err.size() - (o.err.empty() ? 0 : 1))) + "` | " + ms +
                 " |\n";
    }
    if (table_path) std::ofstream(table_path) << table;
    printf("%d bad inputs, the slowest %.0f ms\n", n, slowest);
}

// The control: a valid run on a machine without a GPU gets past every check, prints its summary, then
// fails at the first CUDA call (exit 1), and the loader's log shows the CUDA runtime loading the driver:
// the "not touched" check above can see a touch.
TEST(a_valid_run_without_a_gpu_fails_at_the_gpu) {
    const std::string bin = train_gpt_path();
    if (bin.empty())
        return testing::fail(__FILE__, __LINE__, "no ./train_gpt (make train_gpt; or set TRAIN_GPT)");
    if (have_gpu()) SKIP("a GPU is present: the GPU tests run train_gpt there");
    Fixture fx;
    std::vector<std::string> args = fx.small;
    args.insert(args.end(), {"--steps", "1", "--train-data", "good_train_*.bin"});
    const Outcome o = run(bin, args, fx.dir.path);
    EXPECT_EQ(o.exit_code, 1);
    EXPECT_CONTAINS(o.err, "error: no CUDA device available (");
    // not cudart's "CUDA driver version is insufficient" (error 35) when there is no driver at all: it would
    // send the user to upgrade a driver they do not have
    EXPECT_TRUE(o.err.find("insufficient") == std::string::npos);
    EXPECT_TRUE(o.err.find('\n') == o.err.size() - 1);
    EXPECT_TRUE(o.out.rfind("train_gpt: GPT-2 124m with overrides (2 layers", 0) == 0 && only_summary(o.out));
    EXPECT_TRUE(touched_cuda(o, bin));
}

// --print-config: the resolved configuration as JSON on stdout after the checks, exit 0, no folder created,
// no GPU.
TEST(print_config_prints_json_and_exits) {
    const std::string bin = train_gpt_path();
    if (bin.empty())
        return testing::fail(__FILE__, __LINE__, "no ./train_gpt (make train_gpt; or set TRAIN_GPT)");
    Fixture fx;
    const Outcome o = run(bin, {"--model", "124m", "--log-dir", "runs/a", "--print-config"}, fx.dir.path);
    EXPECT_EQ(o.exit_code, 0);
    EXPECT_TRUE(o.err.empty());
    std::string model, log_dir;
    try {
        const json::Value v = json::parse(o.out);
        model = v.find("model")->as_string();
        log_dir = v.find("log_dir")->as_string();
    } catch (const std::exception& e) {
        testing::fail(__FILE__, __LINE__, std::string("not JSON: ") + e.what() + ": " + o.out);
    }
    EXPECT_TRUE(model == "124m" && log_dir == "runs/a");
    struct stat st;
    EXPECT_TRUE(stat(fx.dir.file("runs").c_str(), &st) != 0);
    EXPECT_TRUE(!touched_cuda(o, bin));
    // and the checks run first: a bad shard is still reported
    const Outcome bad = run(bin, {"--train-data", "magic.bin", "--print-config"}, fx.dir.path);
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_TRUE(bad.out.empty());
}

// An export without training refuses --checkpoint-dir (and every other training flag) by name and creates
// no folder; without it the same export passes every check (and, without a GPU, stops at the GPU).
TEST(export_only_refuses_a_checkpoint_dir_and_creates_no_folder) {
    const std::string bin = train_gpt_path();
    if (bin.empty())
        return testing::fail(__FILE__, __LINE__, "no ./train_gpt (make train_gpt; or set TRAIN_GPT)");
    Fixture fx;
    std::vector<std::string> args = fx.small;
    args.insert(args.end(),
                {"--init-from", "good.safetensors", "--export", "w.safetensors", "--log-dir", "lg"});
    std::vector<std::string> with_ckpt = args;
    with_ckpt.insert(with_ckpt.end(), {"--checkpoint-dir", "ck"});
    const Outcome o = run(bin, with_ckpt, fx.dir.path);
    EXPECT_EQ(o.exit_code, 2);
    EXPECT_TRUE(o.err.rfind("error: --checkpoint-dir: has no effect with --export (", 0) == 0);
    struct stat st;
    EXPECT_TRUE(stat(fx.dir.file("ck").c_str(), &st) != 0 && stat(fx.dir.file("lg").c_str(), &st) != 0);
    EXPECT_TRUE(!touched_cuda(o, bin));
    const Outcome legal = run(bin, args, fx.dir.path);
    if (have_gpu()) {
        EXPECT_EQ(legal.exit_code, 0);
    } else {
        EXPECT_EQ(legal.exit_code, 1);
        EXPECT_CONTAINS(legal.err, "error: no CUDA device available (");
    }
    EXPECT_TRUE(stat(fx.dir.file("ck").c_str(), &st) != 0);
}

// --generate: everything but the text goes to stderr (the summary says what it generates), no folder is
// created; without a GPU it stops there with nothing on stdout. With one, the fixture's all-zero model has
// equal logits everywhere, so greedy decoding gives id 0 (the lowest) each time: the prompt, 5 NUL bytes, a
// newline.
TEST(generate_prints_only_the_text_on_stdout_and_creates_nothing) {
    const std::string bin = train_gpt_path();
    if (bin.empty())
        return testing::fail(__FILE__, __LINE__, "no ./train_gpt (make train_gpt; or set TRAIN_GPT)");
    Fixture fx;
    std::vector<std::string> args = fx.small_one_sequence();
    args.insert(args.end(), {"--init-from", "good.safetensors", "--generate", "5", "--prompt", "hi",
                             "--temperature", "0"});
    const Outcome o = run(bin, args, fx.dir.path);
    EXPECT_CONTAINS(o.err, "train_gpt: GPT-2 124m with overrides (2 layers");
    EXPECT_CONTAINS(o.err,
                    "\n  generate     5 tokens after the prompt on stdout (a window of 64 tokens), greedy");
    if (have_gpu()) {
        EXPECT_EQ(o.exit_code, 0);
        EXPECT_TRUE(o.out == std::string("hi") + std::string(5, '\0') + "\n");
    } else {
        EXPECT_EQ(o.exit_code, 1);
        EXPECT_TRUE(o.out.empty());
        EXPECT_TRUE(o.err.size() > 1 &&
                    o.err.rfind("\nerror: no CUDA device available (") != std::string::npos &&
                    o.err.find('\n', o.err.rfind("\nerror: ") + 1) == o.err.size() - 1);
    }
    struct stat st;
    EXPECT_TRUE(stat(fx.dir.file("logs").c_str(), &st) != 0);
}

// --help: every line within 120 columns, the per-precision --recompute default, the bf16 moments' real
// saving, and a file, folder or glob flag labelled as one (not TEXT).
TEST(help_fits_120_columns_and_says_what_each_flag_takes) {
    const std::string bin = train_gpt_path();
    if (bin.empty())
        return testing::fail(__FILE__, __LINE__, "no ./train_gpt (make train_gpt; or set TRAIN_GPT)");
    TempDir dir("host_bad_input_help");
    const Outcome o = run(bin, {"--help"}, dir.path);
    EXPECT_EQ(o.exit_code, 0);
    EXPECT_TRUE(o.err.empty());
    for (size_t b = 0, n = 1; b < o.out.size(); n++) {
        const size_t e = std::min(o.out.find('\n', b), o.out.size());
        if (e - b > 120)
            testing::fail(__FILE__, __LINE__,
                          "line " + std::to_string(n) + " has " + std::to_string(e - b) +
                              " columns: " + o.out.substr(b, e - b));
        b = e + 1;
    }
    EXPECT_CONTAINS(o.out, "--recompute INT=0 (fp8 from 774m: 2) ");
    EXPECT_CONTAINS(o.out, "bf16: 4 bytes less memory per parameter");
    for (const char* label : {"--train-data GLOB=random ", "--val-data GLOB ", "--eval-hellaswag FILE ",
                              "--eval-hellaswag-dump FILE ", "--log-dir DIR=logs ", "--checkpoint-dir DIR ",
                              "--resume DIR ", "--tokenizer FILE ", "--init-from FILE|DIR ",
                              "--export FILE|DIR ", "--gemm-cache FILE ", "--version"})
        EXPECT_CONTAINS(o.out, label);
    EXPECT_TRUE(o.out.find(" TEXT") == o.out.find("--prompt TEXT") + 8);  // text only where text is meant
    EXPECT_TRUE(!touched_cuda(o, bin));
}

// --version: the commit and, for the CUDA runtime, cuBLASLt, cuDNN and NCCL, the version built with and the
// one loaded, and the driver's (none on a machine without one); exit 0 with or without a GPU.
TEST(version_names_the_commit_and_the_libraries) {
    const std::string bin = train_gpt_path();
    if (bin.empty())
        return testing::fail(__FILE__, __LINE__, "no ./train_gpt (make train_gpt; or set TRAIN_GPT)");
    TempDir dir("host_bad_input_version");
    const Outcome o = run(bin, {"--version"}, dir.path);
    EXPECT_EQ(o.exit_code, 0);
    EXPECT_TRUE(o.err.empty());
    EXPECT_TRUE(o.out.rfind("train_gpt ", 0) == 0 && o.out.size() > 11 && o.out[10] != '\n');
    for (const char* row :
         {"\n  CUDA runtime  built with ", "\n  CUDA driver   ", "\n  cuBLASLt      built with ",
          "\n  cuDNN         built with ", "\n  NCCL          built with "})
        EXPECT_CONTAINS(o.out, row);
    EXPECT_TRUE(o.out.find("loaded ?") == std::string::npos);
    // with other flags too, even wrong ones: it is asked before anything else
    EXPECT_EQ(run(bin, {"--steps", "0", "--version"}, dir.path).exit_code, 0);
}

// Shards with the bytes tokenizer beside them and a --vocab far past its 256 tokens (GPT-2's 50304, say):
// a warning naming both numbers before the GPU; none at the tokenizer's own size.
TEST(a_vocab_past_the_tokenizer_beside_the_shards_is_warned_about) {
    const std::string bin = train_gpt_path();
    if (bin.empty())
        return testing::fail(__FILE__, __LINE__, "no ./train_gpt (make train_gpt; or set TRAIN_GPT)");
    Fixture fx;
    std::vector<std::string> args = fx.small;
    args.insert(args.end(), {"--train-data", "bytes/train_*.bin", "--print-config", "--vocab", "512"});
    const Outcome o = run(bin, args, fx.dir.path);
    EXPECT_EQ(o.exit_code, 0);
    const std::string want =
        "warning: --vocab 512 but the tokenizer 'bytes/tokenizer.bin' has 256 tokens: 256 rows of the token "
        "embedding (the tied LM head) never occur in the data (for this tokenizer pass --vocab 256)\n";
    if (o.err != want) testing::fail(__FILE__, __LINE__, "stderr [" + o.err + "], expected [" + want + "]");
    EXPECT_TRUE(!touched_cuda(o, bin));
    args.back() = "256";
    const Outcome fits = run(bin, args, fx.dir.path);
    EXPECT_EQ(fits.exit_code, 0);
    EXPECT_TRUE(fits.err.empty());
}

TEST_MAIN()

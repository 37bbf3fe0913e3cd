#include "llmc/run/preflight.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "llmc/formats/checkpoint.h"
#include "llmc/formats/file_checks.h"
#include "llmc/host/logger.h"
#include "llmc/model/weights_io.h"
#include "llmc/parallel/comm.h"
#include "llmc/run/train_state.h"

namespace {

// `msg` led by the flag it is about (unless it already is).
std::string about(const std::string& flag, const std::string& msg) {
    return msg.compare(0, flag.size(), flag) == 0 ? msg : flag + ": " + msg;
}

std::string check_export_has_weights(const TrainConfig& cfg, bool allow_export_of_init) {
    if (!cfg.resume.empty() || !cfg.init_from.empty()) return "";
    if (run_mode(cfg) == RunMode::Generate)
        return "--generate: no weights to generate from: pass --init-from FILE or --resume DIR "
               "(else it would sample the random initialization)";
    if (!export_only(cfg) || allow_export_of_init) return "";
    return "--export: nothing to export: pass --resume DIR or --init-from FILE (else it would write "
           "the random initialization), or --export-at-end to export after training";
}

std::string check_launch(const TrainConfig& cfg, RunPlan* plan) {
    try {
        plan->launch = detect_launch();
        plan->rendezvous = cfg.rendezvous.empty()
                               ? default_rendezvous(plan->launch, [](const char* k) { return getenv(k); })
                               : parse_rendezvous(cfg.rendezvous);
    } catch (const std::exception& e) {
        return e.what();  // names the variable or --rendezvous
    }
    if (run_mode(cfg) == RunMode::Generate && plan->launch.world_size > 1)
        return "--generate: runs in one process, this one is rank " + std::to_string(plan->launch.rank) +
               " of " + std::to_string(plan->launch.world_size) + " (start it without a launcher)";
    if (cfg.ranks_per_gpu > 1 && plan->launch.world_size == 1)
        return "--ranks-per-gpu " + std::to_string(cfg.ranks_per_gpu) +
               ": this process is the only rank (no launcher started several); it has no effect on one";
    if (std::string e = ranks_per_gpu_unsupported(cfg.ranks_per_gpu); !e.empty()) return e;
    return grad_accum_steps(cfg, plan->launch.world_size, &plan->micro_steps);
}

// --init-from, --resume and --export: headers only, however large the files.
std::string check_weight_files(const TrainConfig& cfg) {
    if (!cfg.init_from.empty()) try {
            check_import(cfg.init_from, cfg.model);
        } catch (const std::exception& e) {
            return about("--init-from", e.what());
        }
    if (!cfg.resume.empty()) try {
            CheckpointMeta expect;
            expect.model = model_signature(cfg.model);
            expect.recipe = recipe_signature(cfg);
            find_resumable_checkpoint(cfg.resume, expect);
        } catch (const std::exception& e) {
            return about("--resume", e.what());
        }
    if (!cfg.export_path.empty()) return check_export_destination(cfg.export_path, cfg.export_format);
    return "";
}

// --gemm-cache FILE (with --gemm-autotune): a regular file that can be appended to, or one that can be
// created (its missing folders too, as the cache creates them). The default file under ~/.cache is not
// checked: a run that cannot store its choices there warns and goes on.
std::string check_gemm_cache(const TrainConfig& cfg) {
    const std::string& path = cfg.gemm_cache;
    if (!cfg.gemm_autotune || path.empty() || path == "none") return "";
    const std::string what = "--gemm-cache '" + path + "': ";
    struct stat st;
    if (stat(path.c_str(), &st) == 0) {
        std::string why;
        const int fd = open_regular_file(path, &why);
        if (fd < 0) return what + why;
        close(fd);
        if (access(path.c_str(), W_OK) != 0) return what + "cannot write it: " + strerror(errno);
        return "";
    }
    std::string above = path;  // the nearest existing folder above it
    do {
        const size_t slash = above.find_last_of('/');
        above = slash == std::string::npos ? "." : slash == 0 ? "/" : above.substr(0, slash);
    } while (above != "." && above != "/" && stat(above.c_str(), &st) != 0);
    const std::string why = file_creatable_in(above);
    return why.empty() ? "" : what + why;
}

// The tokenizer beside the shards (scripts/data/prepare_data.py writes tokenizer.bin next to them), "" if
// none.
std::string tokenizer_beside_shards(const TrainConfig& cfg) {
    if (cfg.train_data == "random") return "";
    const size_t slash = cfg.train_data.rfind('/');
    const std::string path =
        (slash == std::string::npos ? std::string(".") : cfg.train_data.substr(0, slash)) + "/tokenizer.bin";
    return access(path.c_str(), F_OK) == 0 ? path : "";
}

// A --vocab far above the tokenizer's (bytes shards trained with GPT-2's 50304): rows that never occur in
// the data, most of the LM head's work wasted. Past the tokenizer's size rounded up to 128 (50257 -> 50304),
// a warning naming both numbers; "" when there is no tokenizer to compare with.
std::string vocab_warning(const TrainConfig& cfg) {
    const std::string path = cfg.tokenizer.empty() ? tokenizer_beside_shards(cfg) : cfg.tokenizer;
    if (path.empty()) return "";
    int tokens = 0;
    try {
        tokens = Tokenizer::load(path).vocab_size();
    } catch (const std::exception&) {
        return "";  // an unreadable tokenizer is an error where it is used (text samples)
    }
    const int padded = (tokens + 127) / 128 * 128;
    if (cfg.model.vocab_size <= padded) return "";
    return "--vocab " + std::to_string(cfg.model.vocab_size) + " but the tokenizer '" + path + "' has " +
           std::to_string(tokens) + " tokens: " + std::to_string(cfg.model.vocab_size - tokens) +
           " rows of the token embedding (the tied LM head) never occur in the data (for this tokenizer pass "
           "--vocab " +
           std::to_string(padded) + ")";
}

// The tokenizer for text samples and --generate: --tokenizer, else tokenizer.bin next to the training shards
// (samples), else bytes when the vocabulary is 256. The prompt must encode, and the ids must fit the model's
// vocabulary.
std::string load_sample_tokenizer(const TrainConfig& cfg, Tokenizer* out) {
    const bool generating = run_mode(cfg) == RunMode::Generate;
    if (cfg.sample_every <= 0 && !generating) return "";
    const std::string path = cfg.tokenizer.empty() ? tokenizer_beside_shards(cfg) : cfg.tokenizer;
    const char* flag = !cfg.tokenizer.empty() ? "--tokenizer" : generating ? "--generate" : "--sample-every";
    try {
        if (!path.empty())
            *out = Tokenizer::load(path);
        else if (cfg.model.vocab_size == 256)
            *out = Tokenizer::bytes();
        else
            return std::string(flag) +
                   ": no tokenizer: pass --tokenizer FILE (scripts/data/prepare_data.py writes tokenizer.bin "
                   "next to the shards)";
    } catch (const std::exception& e) {  // "tokenizer 'PATH': ..." -> "--tokenizer 'PATH': ..."
        const std::string what = e.what(), lead = "tokenizer '";
        if (!cfg.tokenizer.empty() && what.compare(0, lead.size(), lead) == 0) return "--" + what;
        return about(flag, what);
    }
    if (out->vocab_size() > cfg.model.vocab_size)
        return std::string(flag) + ": tokenizer '" + path + "' has " + std::to_string(out->vocab_size()) +
               " tokens, more than the model's --vocab " + std::to_string(cfg.model.vocab_size);
    try {
        out->encode(cfg.prompt);
    } catch (const std::exception& e) {
        return about("--prompt", e.what());
    }
    return "";
}

// A data error as the flag's: "--val-data: data file 'x': ...", "--train-data: no file matches ...".
std::string data_error(const char* flag, const std::string& what) {
    const std::string generic = "data: ";
    return about(flag, what.compare(0, generic.size(), generic) == 0 ? what.substr(generic.size()) : what);
}

// Every shard's header and size, and the first shard's tokens (DataLoader's constructor); these sources are
// the run's.
std::string open_token_sources(const TrainConfig& cfg, RunPlan* plan) {
    const int world = plan->launch.world_size;
    const int train_rows = cfg.batch * plan->micro_steps * world;  // GlobalBatch::rows()
    try {
        plan->train_data =
            make_token_source(cfg.train_data, train_rows, cfg.seq, cfg.model.vocab_size, cfg.seed);
    } catch (const std::exception& e) {
        return data_error("--train-data", e.what());
    }
    if (cfg.val_data.empty()) return "";
    try {
        plan->val_data =
            make_token_source(cfg.val_data, cfg.batch * world, cfg.seq, cfg.model.vocab_size, cfg.seed + 1);
    } catch (const std::exception& e) {
        return data_error("--val-data", e.what());
    }
    return "";
}

// --eval-hellaswag: the whole file, read and validated against the model's vocabulary (what the run then
// scores), with every row (context + ending) within --seq; --eval-hellaswag-dump: a file in a writable
// folder.
std::string load_hellaswag(const TrainConfig& cfg, RunPlan* plan) {
    if (cfg.eval_hellaswag.empty()) return "";
    const std::string flag = "--eval-hellaswag: ";
    try {
        plan->hellaswag =
            std::make_unique<HellaSwagSet>(read_hellaswag(cfg.eval_hellaswag, cfg.model.vocab_size));
    } catch (const std::exception& e) {  // "hellaswag 'PATH': ..." -> "--eval-hellaswag: 'PATH': ..."
        const std::string what = e.what(), lead = "hellaswag ";
        return flag + (what.compare(0, lead.size(), lead) == 0 ? what.substr(lead.size()) : what);
    }
    // a row of L tokens is L - 1 positions: inputs are its first L - 1 tokens (layout_hellaswag)
    const int longest = plan->hellaswag->max_row_tokens();
    if (longest - 1 > cfg.seq)
        return flag + "'" + cfg.eval_hellaswag + "': its longest row (context + ending) has " +
               std::to_string(longest) + " tokens and needs --seq >= " + std::to_string(longest - 1) +
               ", --seq is " + std::to_string(cfg.seq);
    const std::string& dump = cfg.eval_hellaswag_dump;
    if (dump.empty()) return "";
    struct stat st;
    if (stat(dump.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        return "--eval-hellaswag-dump: '" + dump + "' is a folder (it names the file to write)";
    const size_t slash = dump.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : dump.substr(0, slash);
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        return "--eval-hellaswag-dump: '" + dump + "': the folder '" + dir + "' does not exist";
    const std::string why = file_creatable_in(dir);
    return why.empty() ? "" : "--eval-hellaswag-dump: '" + dump + "': " + why;
}

}  // namespace

std::string check_before_gpu(const TrainConfig& cfg, bool allow_export_of_init, RunPlan* plan) {
    std::string e = check_export_has_weights(cfg, allow_export_of_init);
    if (e.empty()) e = check_launch(cfg, plan);
    if (e.empty()) e = check_weight_files(cfg);
    if (e.empty()) e = check_gemm_cache(cfg);
    if (e.empty()) e = load_sample_tokenizer(cfg, &plan->tokenizer);
    if (e.empty()) e = open_token_sources(cfg, plan);
    if (e.empty()) e = load_hellaswag(cfg, plan);
    if (e.empty())
        if (std::string w = vocab_warning(cfg); !w.empty()) plan->warnings.push_back(w);
    return e;
}

namespace {

// A fresh run (not --resume) into a log folder that holds an earlier run's train.jsonl: that log and its
// config.json move to train.jsonl.N / config.json.N (the first N free), so nothing is overwritten, and a
// warning says where they went. "" or the one-line error.
std::string keep_earlier_logs(const std::string& dir) {
    struct stat st;
    const std::string log = dir + "/train.jsonl";
    if (stat(log.c_str(), &st) != 0 || st.st_size == 0) return "";
    int n = 1;
    while (access((log + "." + std::to_string(n)).c_str(), F_OK) == 0 && n < 1000000) n++;
    const std::string suffix = "." + std::to_string(n);
    if (rename(log.c_str(), (log + suffix).c_str()) != 0)
        return "--log-dir: cannot move the earlier run's " + log + " aside: " + strerror(errno);
    const std::string cfg = dir + "/config.json";
    if (access(cfg.c_str(), F_OK) == 0) rename(cfg.c_str(), (cfg + suffix).c_str());
    fprintf(
        stderr,
        "warning: %s held an earlier run's log: moved to train.jsonl%s (--log-dir DIR keeps runs apart)\n",
        dir.c_str(), suffix.c_str());
    return "";
}

}  // namespace

std::string prepare_output_dirs(const TrainConfig& cfg, int rank) {
    if (rank != 0) return "";                           // rank 0 writes the logs and the checkpoints
    if (run_mode(cfg) == RunMode::Generate) return "";  // writes nothing but the text
    if (std::string e = prepare_writable_dir(cfg.log_dir, "--log-dir"); !e.empty()) return e;
    if (cfg.resume.empty())  // a resumed run appends to its log
        if (std::string e = keep_earlier_logs(cfg.log_dir); !e.empty()) return e;
    const std::string ckpt = checkpoint_dir_of(cfg);
    if (ckpt.empty() || run_mode(cfg) != RunMode::Train) return "";  // only training writes checkpoints
    return prepare_writable_dir(ckpt, cfg.checkpoint_dir.empty() ? "--resume" : "--checkpoint-dir");
}

// The checks before the GPU: everything the flags name that can be checked without a GPU, before the CUDA
// context exists, so that a mistake costs well under a second on any machine and ends with one line and
// exit code 2. Host code: no CUDA call. What the checks open (the token sources, the tokenizer) is what the
// run then uses, and the weight and checkpoint checks are the loaders' own header checks, so the check and
// the load cannot disagree.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "llmc/formats/dataloader.h"
#include "llmc/formats/hellaswag.h"
#include "llmc/formats/tokenizer.h"
#include "llmc/host/config.h"
#include "llmc/parallel/launch.h"

// What the checks found, for the run to use as it is.
struct RunPlan {
    LaunchInfo launch;  // this process's rank, the world size, the launcher
    Rendezvous rendezvous;
    int micro_steps = 1;                       // per optimizer step, from --total-batch
    std::unique_ptr<TokenSource> train_data;   // reads the global batch (B x micro-steps x GPUs rows)
    std::unique_ptr<TokenSource> val_data;     // B x GPUs rows; null without --val-data
    Tokenizer tokenizer = Tokenizer::bytes();  // for text samples and --generate
    std::unique_ptr<HellaSwagSet> hellaswag;   // --eval-hellaswag's examples; null without it
    std::vector<std::string> warnings;         // likely mistakes that do not stop the run (--vocab past the
                                               // tokenizer's), one line each, for rank 0 to print
};

// The read-only checks, cheapest first: flag combinations the CLI cannot judge alone (--export with nothing
// to export unless `allow_export_of_init`, a test hook; --generate without weights), the launcher's
// environment (--generate: one process) and --rendezvous, the gradient accumulation on this many GPUs,
// --init-from's header against the model, --resume's newest readable checkpoint against the model and
// recipe, the --export destination, the tokenizer and --prompt (with --sample-every or --generate), the
// train and val shards (every header, the first shard's tokens), and the --eval-hellaswag file (read whole:
// every example must fit --seq) and its dump's folder, and --gemm-cache.
// Files are opened only if they are regular files (a FIFO is refused, not waited on); a folder to be
// written in must take a file (created and removed, nothing else is created).
// Returns "" and fills *plan, or the one-line error naming the flag.
std::string check_before_gpu(const TrainConfig& cfg, bool allow_export_of_init, RunPlan* plan);
// Creates the log directory (rank 0; not for --generate, which writes nothing) and, for a training run, the
// checkpoint directory (rank 0; an export reads --resume's folder and writes nothing there) and checks that
// files can be written in them; a fresh run's earlier train.jsonl and config.json there move to
// train.jsonl.N and config.json.N (with a warning) instead of being overwritten. "" or the one-line error
// naming the flag.
std::string prepare_output_dirs(const TrainConfig& cfg, int rank);

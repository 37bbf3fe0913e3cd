// Token sources for training and validation. Host-only.
//
// Shard format (llm.c's): a header of 256 int32 (little endian): [0] magic 20240520, [1] version 1,
// [2] number of tokens N, the rest zero; then N uint16 token ids. scripts/data/prepare_data.py writes them
// from text; write_shard() below is the reference writer.
//
// A batch is B x T inputs and B x T targets (targets = inputs shifted by one token), read from B*T+1
// contiguous tokens: row b is tokens[pos + b*T .. pos + b*T + T) and its targets start one later.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

constexpr int32_t kShardMagic = 20240520;
constexpr int32_t kShardVersion = 1;
constexpr int kShardHeaderInts = 256;

// A missing, unreadable or corrupt shard. what() is one line that names the file and what was expected.
class DataError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// A token source's position: DataLoader {shard index, token offset}; RandomTokenSource {batches drawn, 0}.
struct TokenPosition {
    uint64_t a = 0, b = 0;
};

// Anything that yields batches of token ids: shard files or random tokens.
class TokenSource {
  public:
    virtual ~TokenSource() = default;
    // Fills inputs_BT and targets_BT (B*T ints each, row-major [B][T]).
    virtual void next_batch(int* inputs_BT, int* targets_BT) = 0;
    // Back to the first batch: the same sequence of batches follows again.
    virtual void reset() = 0;
    // Where the next batch comes from (for checkpoints): two numbers whose meaning is the source's own.
    virtual TokenPosition position() const = 0;
    // Continues from a position() of a source built with the same arguments. Throws DataError if the position
    // does not exist in this data (e.g. the shards changed).
    virtual void seek(const TokenPosition& p) = 0;
};

// Reads shards matching a glob (sorted by name) in order, wrapping from the last back to the first.
// Data-parallel: rank r of world_size reads the batches at offsets r*B*T, (r + world_size)*B*T, ... of each
// shard, so the ranks see disjoint token ranges. When the next batch would run past the end of the current
// shard, it moves to the next shard.
class DataLoader : public TokenSource {
  public:
    // Checks every matching file's header and size up front and loads (and fully validates) the first shard.
    // Throws DataError if nothing matches or any shard is bad, including shards with fewer than
    // world_size*B*T+1 tokens (every rank must get at least one batch from each shard).
    DataLoader(const std::string& glob_pattern, int B, int T, int vocab_size, int rank = 0,
               int world_size = 1);

    void next_batch(int* inputs_BT, int* targets_BT) override;
    void reset() override;
    TokenPosition position() const override { return {shard_, pos_}; }
    void seek(const TokenPosition& p) override;

    size_t num_shards() const { return files_.size(); }
    size_t current_shard() const { return shard_; }
    const std::string& shard_path(size_t i) const { return files_[i]; }
    size_t shard_tokens(size_t i) const { return shard_sizes_[i]; }  // token count from the header
    size_t total_tokens() const;                                     // over all shards

  private:
    void load_shard(size_t index);  // reads and validates every token id; throws DataError

    int B_, T_, vocab_size_, rank_, world_size_;
    std::vector<std::string> files_;
    std::vector<size_t> shard_sizes_;
    size_t shard_ = 0;              // index of the shard in tokens_
    size_t pos_ = 0;                // offset of the next batch in tokens_
    std::vector<uint16_t> tokens_;  // the current shard
};

// Uniform random token ids in [0, V), deterministic from the seed (std::mt19937_64): inputs and targets are
// independent draws, like the seed script's torch.randint(V, [B, T]) for both. Used for --train-data random.
class RandomTokenSource : public TokenSource {
  public:
    RandomTokenSource(int B, int T, int V, uint64_t seed);
    void next_batch(int* inputs_BT, int* targets_BT) override;
    void reset() override;
    TokenPosition position() const override { return {batches_, 0}; }
    void seek(const TokenPosition& p) override;  // replays the generator: fast (~1 ns per token)

  private:
    int B_, T_, V_;
    uint64_t seed_;
    std::mt19937_64 rng_;
    uint64_t batches_ = 0;  // drawn since the seed
};

// One optimizer step's tokens for all ranks and micro-steps: B x micro_steps x ranks rows, drawn as ONE batch
// of a source built with rows() rows, so the data order does not depend on the number of GPUs or micro-steps
// (and a checkpoint holds one position). Micro-step k of rank r trains on rows [(k * ranks + r) * B, + B).
class GlobalBatch {
  public:
    GlobalBatch(int B, int T, int micro_steps, int ranks, int rank);
    int rows() const { return B_ * micro_steps_ * ranks_; }
    void next(TokenSource* src) { src->next_batch(inputs_.data(), targets_.data()); }
    // This rank's B x T inputs/targets of micro-step k (row-major [B][T]).
    const int* inputs_of(int k) const { return inputs_.data() + offset(k); }
    const int* targets_of(int k) const { return targets_.data() + offset(k); }
    int micro_steps() const { return micro_steps_; }

  private:
    size_t offset(int k) const { return ((size_t)k * ranks_ + rank_) * B_ * T_; }
    int B_, T_, micro_steps_, ranks_, rank_;
    std::vector<int> inputs_, targets_;
};

// "random" -> RandomTokenSource (the seed is mixed with the rank so ranks differ; rank 0 uses `seed`),
// anything else -> DataLoader on that glob. Throws DataError like DataLoader.
std::unique_ptr<TokenSource> make_token_source(const std::string& spec, int B, int T, int vocab_size,
                                               uint64_t seed, int rank = 0, int world_size = 1);

// Writes `tokens` as a shard (header + uint16 tokens) to path + ".tmp", then renames it to path, so a reader
// never sees a half-written shard. Throws DataError on I/O failure.
void write_shard(const std::string& path, const std::vector<uint16_t>& tokens);

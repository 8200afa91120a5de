#include "io/av_owners.hpp"

#include "io/media_reader.hpp"

namespace hazefree::io {

void PacketDeleter::operator()(AVPacket* packet) const { av_packet_free(&packet); }

namespace detail {

std::string Dictionary::keys() const {
  std::string list;
  const AVDictionaryEntry* entry = nullptr;
  while ((entry = av_dict_get(dict_, "", entry, AV_DICT_IGNORE_SUFFIX))) {
    if (!list.empty()) list += ", ";
    list += entry->key;
  }
  return list;
}

}  // namespace detail
}  // namespace hazefree::io

/*
 * disaggsim: the fabric's L2 frame header.
 */
#include "fabric-header.h"

namespace ns3
{

std::ostream&
operator<< (std::ostream& os, const FabricHeader& header)
{
    os << "src_host=" << header.srcHost << " dst_host=" << header.dstHost << " protocol=0x"
       << std::hex << header.protocol << std::dec << " ecn=" << static_cast<int> (header.ecn)
       << " flow_hash=" << header.flowHash << " rank=" << header.rank
       << " payload_bytes=" << header.payloadBytes;
    if (header.trafficClass != 0)
    {
        os << " traffic_class=" << static_cast<uint32_t> (header.trafficClass);
    }
    if (header.transportFlags != 0)
    {
        os << " flow_id=" << header.flowId << " seq=" << header.seq
           << " sack_seq=" << header.sackSeq
           << " flags=" << static_cast<uint32_t> (header.transportFlags);
    }
    return os;
}

uint32_t
FabricFlowHash (uint32_t srcIpv4, uint32_t dstIpv4, uint8_t protocol, uint16_t srcPort,
                uint16_t dstPort)
{
    // murmur3 fmix64 (Appleby, MurmurHash3) over the two halves of the tuple.
    uint64_t key = (static_cast<uint64_t> (srcIpv4) << 32) | dstIpv4;
    key ^= (static_cast<uint64_t> (srcPort) << 24) ^ (static_cast<uint64_t> (dstPort) << 8) ^
           protocol ^ 0x9E3779B97F4A7C15ULL;
    key ^= key >> 33;
    key *= 0xFF51AFD7ED558CCDULL;
    key ^= key >> 33;
    key *= 0xC4CEB9FE1A85EC53ULL;
    key ^= key >> 33;
    return static_cast<uint32_t> (key ^ (key >> 32));
}

} // namespace ns3

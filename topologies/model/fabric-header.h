/*
 * disaggsim: the fabric's L2 frame header, carried out of band with each packet.
 */
#ifndef DISAGGSIM_FABRIC_HEADER_H
#define DISAGGSIM_FABRIC_HEADER_H

#include "ns3/ipv4-address.h"

#include <cstdint>
#include <ostream>

namespace ns3
{

/**
 * Wire bytes the fabric header stands for: an 802.1Q Ethernet header
 * (6 B dst MAC + 6 B src MAC + 4 B VLAN tag + 2 B EtherType = 18 B).  Every packet's
 * serialization time counts these bytes on top of Packet::GetSize(); the header itself is
 * never serialized into the Packet (see topologies/doc/clos.md, "Frames").
 */
constexpr uint32_t kFabricHeaderBytes = 18;

/// Traffic classes of the fabric: the 3-bit 802.1p priority code point (PCP) of the frame's
/// 802.1Q tag (IEEE 802.1Q §6.9.3), the unit PFC pauses (IEEE 802.1Qbb).
constexpr uint32_t kFabricTrafficClasses = 8;

/// ECN codepoints (RFC 3168 §5), the same values as the two ECN bits of the IPv4 TOS byte.
enum class FabricEcn : uint8_t
{
    NOT_ECT = 0x00,
    ECT1 = 0x01,
    ECT0 = 0x02,
    CE = 0x03,
};

/**
 * \brief The L2 frame header of the fabric, passed with the packet through channels and
 * queues as a plain struct (no serialization, no tags).
 *
 * Fields: srcHost/dstHost are host indices (rack-major: host = rack * hostsPerRack + i);
 * protocol is the EtherType-like number handed to the host's protocol handlers (0x0800 for
 * IPv4); ecn is the frame's ECN codepoint (switch ports set CE); flowHash selects the ECMP
 * uplink at a ToR (per-flow ECMP); rank is a scheduling priority for priority queues such as
 * pFabric's (lower = more urgent; 0 for FIFO transports); payloadBytes is the transport
 * payload the frame carries (0 for pure control packets such as TCP ACKs), used for the
 * data-packet statistics.  pinnedUplink, when not kFabricAnyUplink, pins the frame's path:
 * a switch whose route to dstHost is an ECMP group of several ports takes port
 * group[pinnedUplink % size] instead of hashing flowHash (on the Clos fabric the uplink group
 * of a ToR is spine 0..S-1, so the value is the spine; Fastpass's per-packet path selection,
 * transports/fastpass/doc/fastpass.md §4).  Single-port routes ignore it.
 * trafficClass is the frame's 802.1p priority code point (0..7, kFabricTrafficClasses), the
 * class that a multi-class port queue (StrictPriorityQueue) serves it in and that PFC pauses
 * (topologies/doc/lossless.md); 0 for every transport that does not choose one, and a
 * class-blind queue ignores it.
 * intRequested, when 1, asks every switch egress port the frame leaves through to append
 * an in-band telemetry record (IntHop: time, the port's transmitted bytes, queue length,
 * line rate) to the frame's records (IntRecords, topologies/model/int-tag.h; HPCC §3.2),
 * whose key the frame carries in sackSeq (IntFrameKey; the transport opens them,
 * IntRecords::Open); the transport counts the INT header's wire bytes
 * (kIntHeaderBytes) in its packet.  0 for
 * every other transport: nothing is stamped and no frame pays more than the flag's test.
 *
 * Transport fields: a transport may carry its own header here too, out of band, instead of
 * serializing it into the Packet (pFabric does, transports/pfabric/model/pfabric-header.h):
 * flowId, seq (a byte offset or cumulative ACK), sackSeq (the offset an ACK answers) and
 * transportFlags, read only by the end hosts.  The Packet then holds that header's bytes
 * zero-filled, so its size and serialization time are those of the real header.  Other
 * transports leave them 0.  Switches and ports never read them, except sackSeq of a frame
 * with INT records (its key, IntFrameKey).
 */
struct FabricHeader
{
    uint16_t srcHost{0};
    uint16_t dstHost{0};
    uint16_t protocol{0};
    FabricEcn ecn{FabricEcn::NOT_ECT};
    uint8_t transportFlags{0}; ///< transport field (in what was padding)
    uint32_t flowHash{0};
    uint32_t rank{0};
    uint32_t payloadBytes{0};
    uint16_t pinnedUplink{0xFFFF};
    uint8_t trafficClass{0}; ///< 802.1p PCP, 0..7 (in what was padding)
    uint8_t intRequested{0}; ///< 1: switch egress ports stamp INT records (in what was padding)
    // transport fields
    uint64_t flowId{0};
    uint32_t seq{0};
    uint32_t sackSeq{0};

    /// \returns true if the frame is ECN-capable (ECT(0) or ECT(1)) and may be CE-marked.
    bool IsEct () const
    {
        return ecn == FabricEcn::ECT0 || ecn == FabricEcn::ECT1;
    }
};

std::ostream& operator<< (std::ostream& os, const FabricHeader& header);

/// FabricHeader::pinnedUplink value of a frame that follows per-flow ECMP.
constexpr uint16_t kFabricAnyUplink = 0xFFFF;

/// First host address of the fabric: host i has IPv4 address 10.0.0.1 + i (one /8 subnet).
constexpr uint32_t kFabricFirstHostIpv4 = 0x0A000001;

/// \returns the IPv4 address of host \p host (10.0.0.1 + host).
inline Ipv4Address
FabricHostIpv4Address (uint32_t host)
{
    return Ipv4Address (kFabricFirstHostIpv4 + host);
}

/// \returns the host index of IPv4 address \p address (inverse of FabricHostIpv4Address).
inline uint32_t
FabricHostFromIpv4Address (Ipv4Address address)
{
    return address.Get () - kFabricFirstHostIpv4;
}

/**
 * \returns a 32-bit hash of a transport 5-tuple (the murmur3 64-bit finalizer applied to the
 * packed tuple), used as FabricHeader::flowHash so that every packet of a flow takes the
 * same ECMP path.
 */
uint32_t FabricFlowHash (uint32_t srcIpv4, uint32_t dstIpv4, uint8_t protocol, uint16_t srcPort,
                         uint16_t dstPort);

} // namespace ns3

#endif // DISAGGSIM_FABRIC_HEADER_H

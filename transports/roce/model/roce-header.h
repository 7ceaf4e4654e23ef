/*
 * disaggsim: what a RoCEv2 packet carries besides the fabric frame header.
 */
#ifndef DISAGGSIM_ROCE_HEADER_H
#define DISAGGSIM_ROCE_HEADER_H

#include <cstdint>

namespace ns3
{

/// EtherType-like number of RoCE frames in FabricHeader::protocol (0x8915, the RoCE
/// EtherType of IBTA Annex A16; RoCEv2 itself is UDP port 4791 over IP, whose header
/// bytes the sizes below count).
constexpr uint16_t kRoceProtocol = 0x8915;

/**
 * Bytes above the 18 B fabric frame header of a RoCEv2 data packet: IPv4 (20) + UDP (8) +
 * InfiniBand base transport header BTH (12) + invariant CRC (4) = 44 B (IBTA Annex A17
 * "RoCEv2", §A17.4; the ICRC of IBA §7.8).  A full data packet of 1000 B payload (HPCC's
 * mix/config.txt PACKET_PAYLOAD_SIZE) is then 1000 + 44 + 18 = 1062 B on the wire.
 */
constexpr uint32_t kRoceDataHeaderBytes = 20 + 8 + 12 + 4;
/// An ACK/NACK: the data headers + the 4 B ACK extended transport header (AETH, IBA §9.7.5).
constexpr uint32_t kRoceAckHeaderBytes = kRoceDataHeaderBytes + 4;
/// A congestion notification packet: the data headers + 16 reserved bytes (IBTA Annex A17.9.3).
constexpr uint32_t kRoceCnpHeaderBytes = kRoceDataHeaderBytes + 16;
/// An RDMA READ request: the data headers + the 16 B RDMA extended transport header (RETH).
constexpr uint32_t kRoceReadRequestHeaderBytes = kRoceDataHeaderBytes + 16;

/**
 * \brief Packet types of a RoCE frame, in FabricHeader::transportFlags.
 *
 * The transport header travels out of band in the FabricHeader's transport fields, as
 * pFabric's does (transports/pfabric/model/pfabric-header.h); the Packet holds its bytes
 * zero-filled so that sizes and serialization times are the real ones:
 * - flowId: the queue pair (one flow = one QP = one message);
 * - seq: DATA: byte offset of the payload in the message (the PSN x MTU); ACK/NACK: the next
 *   byte the responder expects (cumulative; a NACK asks for go-back-N from there);
 * - payloadBytes (FabricHeader): the data bytes of a DATA frame.
 * HPCC's INT records travel in the Packet's IntTag (topologies/model/int-tag.h), data and ACK.
 */
enum RoceFlags : uint8_t
{
    ROCE_DATA = 1,
    ROCE_ACK = 2,
    ROCE_NACK = 4,
    ROCE_CNP = 8,
    ROCE_READ_REQUEST = 16,
};

} // namespace ns3

#endif // DISAGGSIM_ROCE_HEADER_H

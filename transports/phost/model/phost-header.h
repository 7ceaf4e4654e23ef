/*
 * disaggsim: the pHost packet header (RTS, token, data, ACK).
 */
#ifndef DISAGGSIM_PHOST_HEADER_H
#define DISAGGSIM_PHOST_HEADER_H

#include "ns3/header.h"

#include <cstdint>

namespace ns3
{

/// FabricHeader::protocol of pHost frames (an IEEE 802 local experimental EtherType).
constexpr uint16_t kPhostProtocol = 0x88B6;
/**
 * Header bytes of every pHost packet above the 18 B frame header: 22, so a packet carries
 * 40 B of headers as in the pHost paper's simulator (NetSys/simulator, hdr_size 40) and as
 * pFabric here (transports/pfabric/doc/pfabric.md).  Control packets (RTS, token, ACK) are
 * this header alone: 40 B on the wire.
 */
constexpr uint32_t kPhostHeaderBytes = 22;

/**
 * \brief What a pHost packet says (pHost CoNEXT'15 §3.1): type, flow id, the packet number
 * it carries or grants (0-based, a packet = MssBytes of payload, the last one shorter) and
 * the flow size in bytes (an RTS announces it; data packets repeat it so that the first
 * packet to arrive registers the flow even if the one carrying the RTS was lost).
 * Serialized: type 1 B, flow id 8 B, packet number 4 B, size 8 B, 1 B pad = 22 B.
 */
class PhostHeader : public Header
{
  public:
    enum Type : uint8_t
    {
        RTS = 1,      ///< request to send (standalone, when there are no free tokens)
        DATA = 2,     ///< a data packet
        TOKEN = 3,    ///< destination -> source: send packet `packet` of flow `flowId`
        ACK = 4,      ///< destination -> source: every packet of the flow arrived
        DATA_RTS = 5, ///< the first free data packet, which carries the RTS
    };

    static TypeId GetTypeId ();
    TypeId GetInstanceTypeId () const override;
    uint32_t GetSerializedSize () const override;
    void Serialize (Buffer::Iterator start) const override;
    uint32_t Deserialize (Buffer::Iterator start) override;
    void Print (std::ostream& os) const override;

    bool IsData () const
    {
        return type == DATA || type == DATA_RTS;
    }

    uint8_t type{DATA};
    uint64_t flowId{0};
    uint32_t packet{0};
    uint64_t sizeBytes{0};
};

} // namespace ns3

#endif // DISAGGSIM_PHOST_HEADER_H

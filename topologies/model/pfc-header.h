/*
 * disaggsim: the MAC control payload of a PFC pause frame (IEEE 802.1Qbb).
 */
#ifndef DISAGGSIM_PFC_HEADER_H
#define DISAGGSIM_PFC_HEADER_H

#include "fabric-header.h"

#include "ns3/header.h"

#include <array>

namespace ns3
{

/// Wire bytes of a PFC frame: the 64 B minimum Ethernet frame (IEEE 802.3 §3.2.7); the
/// fabric's 18 B header stands for its 6 B destination + 6 B source + 2 B EtherType + 4 B
/// FCS, and the 46 B MAC control payload (PfcHeader) is the rest.
constexpr uint32_t kPfcFrameBytes = 64;

/// Bit times in one pause quantum (IEEE 802.3 Annex 31B.2; the unit of PFC's times, IEEE
/// 802.1Qbb §36.1.3.2 and Annex 31D).
constexpr uint32_t kPfcBitsPerQuantum = 512;

/// Largest pause time a PFC frame carries, in quanta (the 16-bit field).
constexpr uint16_t kPfcMaxQuanta = 0xFFFF;

/**
 * \brief The MAC control payload of a priority-based flow control frame (IEEE 802.1Qbb
 * §36.1.3.2, IEEE 802.3 Annex 31D): opcode 0x0101, a priority-enable vector (bit c: the time
 * of class c is valid) and one pause time per class in quanta of 512 bit times (0 = resume,
 * "XON"), padded with zeros to the 46 B minimum payload, in a MAC control frame (EtherType
 * 0x8808, IEEE 802.3 §31.4.1.3).  A port's own PFC frames travel as these fields
 * (FabricChannel::TransmitPfc to FabricNetDevice::ReceivePfc: no Packet per frame, the wire
 * time of kPfcFrameBytes); this class is their wire format and sets that size.
 */
class PfcHeader : public Header
{
  public:
    static TypeId GetTypeId ();
    TypeId GetInstanceTypeId () const override;
    uint32_t GetSerializedSize () const override;
    void Serialize (Buffer::Iterator start) const override;
    uint32_t Deserialize (Buffer::Iterator start) override;
    void Print (std::ostream& os) const override;

    /// MAC control opcode of PFC (IEEE 802.3 Annex 31A).
    static constexpr uint16_t kOpcode = 0x0101;

    uint16_t opcode{kOpcode};
    uint8_t classEnable{0};                            ///< bit c: quanta[c] is valid
    std::array<uint16_t, kFabricTrafficClasses> quanta{}; ///< pause time per class, quanta
};

} // namespace ns3

#endif // DISAGGSIM_PFC_HEADER_H

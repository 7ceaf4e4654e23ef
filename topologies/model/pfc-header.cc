/*
 * disaggsim: the MAC control payload of a PFC pause frame (IEEE 802.1Qbb).
 */
#include "pfc-header.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED (PfcHeader);

namespace
{
/// opcode (2 B) + priority-enable vector (2 B) + 8 times (16 B) + 26 B reserved = 46 B.
constexpr uint32_t kPfcPayloadBytes = kPfcFrameBytes - kFabricHeaderBytes;
constexpr uint32_t kPfcFieldBytes = 2 + 2 + 2 * kFabricTrafficClasses;
static_assert (kPfcPayloadBytes == 46, "the 46 B minimum Ethernet payload");
} // namespace

TypeId
PfcHeader::GetTypeId ()
{
    static TypeId tid = TypeId ("ns3::PfcHeader")
                            .SetParent<Header> ()
                            .SetGroupName ("Disaggsim")
                            .AddConstructor<PfcHeader> ();
    return tid;
}

TypeId
PfcHeader::GetInstanceTypeId () const
{
    return GetTypeId ();
}

uint32_t
PfcHeader::GetSerializedSize () const
{
    return kPfcPayloadBytes;
}

void
PfcHeader::Serialize (Buffer::Iterator start) const
{
    start.WriteHtonU16 (opcode);
    start.WriteHtonU16 (classEnable);
    for (uint16_t time : quanta)
    {
        start.WriteHtonU16 (time);
    }
    start.WriteU8 (0, kPfcPayloadBytes - kPfcFieldBytes);
}

uint32_t
PfcHeader::Deserialize (Buffer::Iterator start)
{
    opcode = start.ReadNtohU16 ();
    classEnable = static_cast<uint8_t> (start.ReadNtohU16 ());
    for (uint16_t& time : quanta)
    {
        time = start.ReadNtohU16 ();
    }
    start.Next (kPfcPayloadBytes - kPfcFieldBytes);
    return kPfcPayloadBytes;
}

void
PfcHeader::Print (std::ostream& os) const
{
    os << "PFC opcode=0x" << std::hex << opcode << std::dec
       << " enable=" << static_cast<uint32_t> (classEnable);
    for (uint32_t c = 0; c < kFabricTrafficClasses; ++c)
    {
        if ((classEnable >> c) & 1)
        {
            os << " class" << c << "=" << quanta[c];
        }
    }
}

} // namespace ns3

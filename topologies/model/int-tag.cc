/*
 * disaggsim: in-band network telemetry records (HPCC SIGCOMM'19 §3.2).
 */
#include "int-tag.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED (IntTag);

TypeId
IntTag::GetTypeId ()
{
    static TypeId tid = TypeId ("ns3::IntTag")
                            .SetParent<Tag> ()
                            .SetGroupName ("Disaggsim")
                            .AddConstructor<IntTag> ();
    return tid;
}

TypeId
IntTag::GetInstanceTypeId () const
{
    return GetTypeId ();
}

uint32_t
IntTag::GetSerializedSize () const
{
    return 1 + m_nHops * (8 + 8 + 4 + 8);
}

void
IntTag::Serialize (TagBuffer buffer) const
{
    buffer.WriteU8 (static_cast<uint8_t> (m_nHops));
    for (uint32_t i = 0; i < m_nHops; ++i)
    {
        buffer.WriteU64 (m_hops[i].timeNs);
        buffer.WriteU64 (m_hops[i].txBytes);
        buffer.WriteU32 (m_hops[i].qlenBytes);
        buffer.WriteU64 (m_hops[i].rateBps);
    }
}

void
IntTag::Deserialize (TagBuffer buffer)
{
    m_nHops = buffer.ReadU8 ();
    for (uint32_t i = 0; i < m_nHops; ++i)
    {
        m_hops[i].timeNs = buffer.ReadU64 ();
        m_hops[i].txBytes = buffer.ReadU64 ();
        m_hops[i].qlenBytes = buffer.ReadU32 ();
        m_hops[i].rateBps = buffer.ReadU64 ();
    }
}

void
IntTag::Print (std::ostream& os) const
{
    os << "hops=" << m_nHops;
    for (uint32_t i = 0; i < m_nHops; ++i)
    {
        os << " [ts=" << m_hops[i].timeNs << " tx=" << m_hops[i].txBytes
           << " qlen=" << m_hops[i].qlenBytes << " B=" << m_hops[i].rateBps << "]";
    }
}

void
IntTag::PushHop (const IntHop& hop)
{
    if (m_nHops < kIntMaxHops)
    {
        m_hops[m_nHops++] = hop;
    }
}

} // namespace ns3
